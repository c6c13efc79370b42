"""The attribution math: exact conservation for any layout; the baselines do not conserve."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.llm.attribution import equal_split, split_interval, whole_energy
from greenml.llm.inflight import Ledger
from greenml.llm.ratio import RatioEstimator

work = st.floats(0, 1e4, allow_nan=False)


@given(
    energy=st.floats(0, 1e6, allow_nan=False),
    layout=st.lists(st.tuples(work, work, st.floats(0, 1, allow_nan=False)), max_size=40),
    ratio=st.floats(1e-4, 100),
)
def test_split_conserves_every_joule(energy: float, layout: list[tuple[float, float, float]],
                                     ratio: float) -> None:  # fmt: skip
    pre, dec, pres = ([x[i] for x in layout] for i in range(3))
    split = split_interval(energy, pre, dec, ratio, presence=pres)
    charged = sum(split.energy_j(i) for i in range(len(layout)))
    assert charged + split.idle_j == pytest.approx(energy, rel=1e-12, abs=1e-9)
    assert all(split.energy_j(i) >= -1e-9 * max(1.0, energy) for i in range(len(layout)))
    if not layout:
        assert split.idle_j == energy


def test_split_follows_the_ratio() -> None:
    # one request only prefilled 100 tokens, the other decoded 10, prefill a tenth of decode
    split = split_interval(20.0, [100, 0], [0, 10], 0.1)
    assert split.prefill_j[0] == pytest.approx(10.0) and split.decode_j[1] == pytest.approx(10.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_ratio_is_refused(bad: float) -> None:
    with pytest.raises(ConfigError):
        split_interval(1.0, [1], [1], bad)


class FakeSource:
    """A running energy total stepped by the test (hardware is the only fake)."""

    method = "counter"
    uncertainty_rel = 0.05
    scope = "test"

    def __init__(self) -> None:
        self.j = 0.0

    def total_j(self) -> float:
        return self.j


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


events = st.lists(
    st.tuples(
        st.sampled_from(["begin", "chunk", "end", "tick", "cancel"]),
        st.integers(0, 7),  # which request
        st.floats(0.0, 50.0, allow_nan=False),  # joules drawn before the event
        st.floats(0.0, 0.3, allow_nan=False),  # seconds before the event
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(events=events, stream=st.lists(st.booleans(), min_size=8, max_size=8))
def test_ledger_conserves_for_any_request_layout(events: list[tuple[str, int, float, float]],
                                                 stream: list[bool]) -> None:  # fmt: skip
    source, clock = FakeSource(), Clock()
    settled: list[object] = []
    ledger = Ledger(source, on_settled=settled.append, clock=clock, wall_clock=lambda: 1e9)
    open_: dict[int, object] = {}
    for kind, i, joules, dt in events:
        source.j += joules
        clock.t += dt
        req = open_.get(i)
        if kind == "begin" and req is None:
            open_[i] = ledger.begin("/v1/chat/completions", "m", "t", stream[i], 3 + i)
        elif kind == "chunk" and req is not None:
            req.note_chunk(clock.t, 1)  # type: ignore[attr-defined]
        elif kind in ("end", "cancel") and req is not None:
            req.prompt_tokens = 3 + i  # type: ignore[attr-defined]
            ledger.finish(req, "completed" if kind == "end" else "cancelled")  # type: ignore[arg-type]
            del open_[i]
        elif kind == "tick":
            ledger.tick()
        t = ledger.totals
        assert t.attributed_j + t.idle_j + t.pending_j == pytest.approx(t.metered_j, abs=1e-6)
    ledger.settle_all()
    ledger.tick()  # requests ended by settle_all enter one more interval
    t = ledger.totals
    assert t.pending_j == pytest.approx(0.0, abs=1e-6)
    assert t.metered_j == pytest.approx(source.j, abs=1e-6)
    assert t.attributed_j + t.idle_j == pytest.approx(source.j, abs=1e-6)
    assert sum(r.energy_j for r in settled) == pytest.approx(t.attributed_j, abs=1e-6)  # type: ignore[attr-defined]
    assert len(settled) == len({id(r) for r in settled})  # each request settled once


@given(
    energy=st.floats(1.0, 1e4),
    in_flight=st.integers(2, 64),
)
def test_baselines_miscount_under_concurrency(energy: float, in_flight: int) -> None:
    """Whole energy per request counts an interval ``in_flight`` times; equal split ignores work."""
    assert sum(whole_energy(energy, in_flight)) == pytest.approx(energy * in_flight)
    assert sum(equal_split(energy, in_flight)) == pytest.approx(energy)
    # a request that did nothing but wait gets the same equal share as one that decoded
    work = [0.0] * (in_flight - 1) + [10.0]
    fair = split_interval(energy, [0.0] * in_flight, work, 0.05)
    assert fair.energy_j(0) == 0.0 and equal_split(energy, in_flight)[0] > 0


def test_ratio_estimator_recovers_the_ratio() -> None:
    est = RatioEstimator(prior=0.05)
    import random

    rng = random.Random(1)
    for _ in range(400):  # base 50 W, 0.02 J per prefill token, 0.2 J per decode token
        p, d, dt = rng.randint(0, 500), rng.randint(0, 60), 0.1
        est.add(dt, p, d, 50 * dt + 0.02 * p + 0.2 * d + rng.gauss(0, 0.05))
    got = est.current()
    assert got.estimate == pytest.approx(0.1, rel=0.1) and 0 < got.spread < 0.05
    assert est.current().intervals == 400


def test_ratio_stays_at_the_prior_without_data() -> None:
    est = RatioEstimator(prior=0.05)
    assert est.current().estimate == 0.05 and "prior" in est.current().source
