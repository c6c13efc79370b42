"""Hypothesis: usage blocks and span attributes never crash the reader nor invent figures."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from greenml.llm.remote.spans import span_call
from greenml.llm.remote.usage import parse_energy, parse_tokens

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
usage_keys = st.sampled_from(
    [
        "prompt_tokens",
        "completion_tokens",
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "energy",
        "x",
    ]
)
energy_keys = st.sampled_from(
    ["energy_j", "uncertainty_j", "prefill_j", "decode_j", "co2eq_g", "method"]
)


@given(st.dictionaries(usage_keys, json_values), st.dictionaries(energy_keys, json_values))
def test_usage_blocks_parse_to_valid_figures_or_nothing(
    usage: dict[str, Any], energy: dict[str, Any]
) -> None:
    usage = {**usage, "energy": energy} if energy else usage
    tokens = parse_tokens(usage)
    for count in (tokens.input_tokens, tokens.output_tokens):
        assert count is None or (isinstance(count, int) and count >= 0)
    found = parse_energy(usage)
    if found is None:
        return
    raw = energy.get("energy_j")
    assert isinstance(raw, (int, float)) and not isinstance(raw, bool) and raw == found.energy_j
    for value in (
        found.energy_j,
        found.uncertainty_j,
        found.prefill_j,
        found.decode_j,
        found.co2eq_g,
    ):
        assert value is None or (math.isfinite(value) and value >= 0)
    assert found.method in {"counter", "power-integrated", "estimated", "unstated"}


@given(
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.floats(0, 1e9),
    st.sampled_from(["counter", "power-integrated", "estimated"]),
)
def test_valid_usage_reads_back_exactly(p: int, c: int, j: float, method: str) -> None:
    usage = {
        "prompt_tokens": p,
        "completion_tokens": c,
        "energy": {"energy_j": j, "method": method},
    }
    assert (parse_tokens(usage).input_tokens, parse_tokens(usage).output_tokens) == (p, c)
    found = parse_energy(usage)
    assert found is not None and found.energy_j == j and found.method == method


span_keys = st.sampled_from(
    [
        "gen_ai.request.model",
        "gen_ai.response.model",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.prompt_tokens",
        "gen_ai.system",
        "gen_ai.provider.name",
        "gen_ai.operation.name",
        "greenml.proxy.energy_j",
        "greenml.proxy.method",
        "other",
    ]
)
attr_values = st.one_of(
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=3),
)


@given(st.dictionaries(span_keys, attr_values))
def test_span_attributes_read_as_a_call_or_nothing(attrs: dict[str, Any]) -> None:
    call = span_call(attrs)
    if call is None:
        return
    assert call.model.strip() and call.input_tokens >= 0 and call.output_tokens >= 0
    assert call.input_tokens + call.output_tokens >= 0
    assert attrs.get("gen_ai.operation.name") != "execute_tool"
    if call.energy is not None:
        assert call.energy.energy_j == attrs["greenml.proxy.energy_j"]


part_values = st.dictionaries(
    st.sampled_from(["calls", "energy_j", "uncertainty_j", "co2eq_g", "water_ml", "x"]), json_values
)


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["executions", "measured", "estimated", "tool_calls", "y"]),
            st.one_of(json_values, part_values),
        ),
        max_size=4,
    )
)
def test_records_workflow_blocks_sum_without_crashing(blocks: list[dict[str, Any]]) -> None:
    from greenml.report.sci_workflow import workflow_sum

    records = [{"id": f"r{i}", "workflow": b} for i, b in enumerate(blocks)]
    total = workflow_sum([*records, {"id": "none"}, {"id": "bad", "workflow": [1]}])
    assert total.executions >= 0 and len(total.runs) == len(blocks)
    for part in (total.measured, total.estimated):
        assert part.calls >= 0 and part.co2eq_unknown_calls >= 0
        for value in (part.energy_j, part.uncertainty_j, part.co2eq_g, part.water_ml):
            assert math.isfinite(value) and value >= 0
