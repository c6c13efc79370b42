"""Token counting, engine metrics and stats: inputs from outside, property-tested."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.llm.engine_metrics import Unattributed, parse_engine_tokens
from greenml.llm.stats import compute_stats, percentile
from greenml.llm.usage import estimate_prompt_tokens, generated_tokens, parse_json, read_usage

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(doc=json_values)
def test_usage_readers_never_raise_on_any_json(doc: object) -> None:
    usage = read_usage(doc)
    assert usage is None or usage.prompt_tokens is None or usage.prompt_tokens >= 0
    assert generated_tokens(doc) in (0, 1)
    assert estimate_prompt_tokens(doc) >= 0
    assert parse_json(json.dumps(doc).encode()) == doc or doc != doc


@given(data=st.binary())
def test_parse_json_takes_any_bytes(data: bytes) -> None:
    parse_json(data)


def test_usage_block_read() -> None:
    assert read_usage({"usage": {"prompt_tokens": 3, "completion_tokens": 5}}) is not None
    assert read_usage({"usage": {"prompt_tokens": True}}) is None
    assert generated_tokens({"choices": [{"delta": {"content": "w1"}}]}) == 1
    assert generated_tokens({"choices": [{"text": ""}]}) == 0


VLLM_PAGE = """# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 1000.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} 400.0
"""


def test_engine_metrics_unattributed_share() -> None:
    first = parse_engine_tokens(VLLM_PAGE)
    assert first is not None and first.engine == "vllm" and first.prompt_tokens == 1000
    u = Unattributed()
    u.scraped(first)
    u.seen_by_proxy(60, 30)
    later = parse_engine_tokens(VLLM_PAGE.replace("1000.0", "1100.0").replace("400.0", "440.0"))
    assert later is not None
    u.scraped(later)
    assert u.shares() == {"prompt": pytest.approx(0.4), "generated": pytest.approx(0.25)}


@given(text=st.text())
def test_engine_metrics_take_any_text(text: str) -> None:
    parse_engine_tokens(text)


def _row(**kw: object) -> dict[str, object]:
    base = {"status": "completed", "energy_j": 10.0, "prefill_j": 2.0, "decode_j": 8.0,
            "prompt_tokens": 20, "completion_tokens": 8, "uncertainty_j": 1.0, "co2eq_g": 0.001,
            "model": "m", "tenant": "a", "ended_at": 1.0, "ratio": 0.05, "ratio_spread": 0.01,
            "method": "counter", "token_source": "usage"}  # fmt: skip
    return {**base, **kw}


def test_stats_figures() -> None:
    rows = [_row(), _row(energy_j=30.0, decode_j=28.0, tenant="b"),
            _row(status="idle", energy_j=10.0, prefill_j=0.0, decode_j=0.0)]  # fmt: skip
    s = compute_stats(rows)
    assert s["requests"] == 2 and s["attributed_j"] == 40.0 and s["idle_j"] == 10.0
    assert s["metered_j"] == 50.0 and s["idle_share"] == pytest.approx(0.2)
    assert s["j_per_prompt_token"] == pytest.approx(4.0 / 40)
    assert s["j_per_output_token"] == pytest.approx(36.0 / 16)
    assert s["wh_per_1000_requests"] == pytest.approx(20.0 / 3.6)
    b = compute_stats(rows, tenant="b")
    assert b["requests"] == 1 and b["metered_j"] == 50.0  # idle stays the proxy's


@given(values=st.lists(st.floats(0, 1e6), min_size=1, max_size=50))
def test_percentiles_are_ordered(values: list[float]) -> None:
    p50, p95, p99 = (percentile(values, q) for q in (50, 95, 99))
    assert p50 is not None and p95 is not None and p99 is not None
    assert min(values) <= p50 <= p95 <= p99 <= max(values)
