"""Per-minute sums a proxy sends its team server: every joule once, in the right minute."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.llm.minutes import MinuteRollup, minute_of

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC


def _row(
    ended_at: float, energy_j: float, *, model: str | None = "m", tenant: str | None = "t",
    status: str = "completed", prompt: int | None = 10, output: int | None = 5,
) -> dict[str, Any]:  # fmt: skip
    return {"ended_at": ended_at, "model": model, "tenant": tenant, "status": status,
            "prompt_tokens": prompt, "completion_tokens": output, "energy_j": energy_j,
            "prefill_j": energy_j * 0.25, "decode_j": energy_j * 0.75,
            "uncertainty_j": energy_j * 0.1, "co2eq_g": None}  # fmt: skip


def test_a_request_counts_in_the_minute_it_ended_and_idle_has_no_model() -> None:
    rollup = MinuteRollup()
    rollup.add_request(_row(T0 + 59.9, 2.0))
    rollup.add_request(_row(T0 + 60.0, 3.0, status="cancelled", prompt=None))
    rollup.add_idle(T0 + 61, 1.5, co2eq_g=0.1)
    rows = rollup.drain()
    assert [(r["minute"], r["model"], r["tenant"]) for r in rows] == [
        (T0, "m", "t"), (T0 + 60, "", ""), (T0 + 60, "m", "t")]  # fmt: skip
    first, idle, second = rows
    assert first["requests"] == 1 and first["prompt_tokens"] == 10 and first["co2eq_g"] is None
    assert second["cancelled"] == 1 and second["prompt_tokens"] == 0
    assert idle["idle_j"] == 1.5 and idle["requests"] == 0 and idle["co2eq_g"] == 0.1
    assert rollup.drain() == []  # drained once


def test_none_model_and_tenant_are_empty_strings_of_their_own_key() -> None:
    rollup = MinuteRollup()
    rollup.add_request(_row(T0, 1.0, model=None, tenant=None))
    rollup.add_request(_row(T0, 1.0, model="m", tenant=None))
    assert {(r["model"], r["tenant"]) for r in rollup.drain()} == {("", ""), ("m", "")}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 7200), st.floats(0, 1e4), st.sampled_from(["a", "b"]),
                          st.booleans()), max_size=60))  # fmt: skip
def test_every_joule_added_comes_out_once(events: list[tuple[float, float, str, bool]]) -> None:
    rollup = MinuteRollup()
    drained: list[dict[str, Any]] = []
    for i, (offset, joules, tenant, idle) in enumerate(events):
        if idle:
            rollup.add_idle(T0 + offset, joules)
        else:
            rollup.add_request(_row(T0 + offset, joules, tenant=tenant))
        if i % 7 == 3:
            drained += rollup.drain()
    drained += rollup.drain()
    attributed = sum(j for _, j, _, idle in events if not idle)
    idle_j = sum(j for _, j, _, idle in events if idle)
    assert math.isclose(sum(r["energy_j"] for r in drained), attributed, abs_tol=1e-6)
    assert math.isclose(sum(r["idle_j"] for r in drained), idle_j, abs_tol=1e-6)
    assert sum(r["requests"] for r in drained) == sum(not e[3] for e in events)
    assert all(r["minute"] == minute_of(r["minute"]) and r["minute"] % 60 == 0 for r in drained)
