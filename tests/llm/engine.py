"""A real OpenAI-compatible engine for the tests: ``transformers serve`` on a tiny Llama.

The model is built here with random weights and a word-level tokenizer over
``w0 … w999`` (no download); greedy decoding makes its output deterministic.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

WORDS = 1000


def build_model(directory: Path) -> Path:
    """Save a tiny random Llama and its tokenizer in ``directory``."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    vocab.update({f"w{i}": i + 4 for i in range(WORDS)})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        pad_token="<pad>",
    )  # fmt: skip
    fast.chat_template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=256, intermediate_size=512, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
        bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )  # fmt: skip
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = None  # random weights: never stop early
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_engine(model_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``transformers serve --continuous-batching`` on a free port; waits for /health."""
    port = free_port()
    exe = Path(sys.executable).parent / "transformers"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [str(exe), "serve", "--continuous-batching", "--host", "127.0.0.1", "--port", str(port),
           str(model_dir)]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"transformers serve exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    proc.terminate()
    raise RuntimeError(f"transformers serve did not come up: {log.read_text()[-2000:]}")


def prompt(n: int, seed: int = 0) -> str:
    return " ".join(f"w{(seed * 7 + i * 13) % WORDS}" for i in range(n))
