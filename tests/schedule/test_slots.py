"""Interruptible placement: optimal on the slot grid, constraints always held."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from greenml.accounting.series import StepSeries
from greenml.schedule import slots
from greenml.schedule.slots import best_pieces
from greenml.schedule.window import Integral, best_window

H = 3600.0
T0 = 1_685_577_600.0


def hourly(values: list[float] | np.ndarray) -> StepSeries:
    v = np.asarray(values, dtype=float)
    return StepSeries(T0 + H * np.arange(len(v)), v, H, "g/kWh")


def check(pieces: slots.Pieces | None, start: float, end: float, duration: float, least: float,
          most: int) -> slots.Pieces:  # fmt: skip
    """The pieces, once every constraint is checked."""
    assert pieces is not None
    spans = pieces.spans_s
    assert 1 <= len(spans) <= most
    assert sum(b - a for a, b in spans) == pytest.approx(duration)
    for a, b in spans:
        assert start - 1e-6 <= a < b <= end + 1e-6
        assert b - a >= least - 1e-6
    for (_, b), (a, _) in itertools.pairwise(spans):
        assert a > b  # separate pieces, in order
    return pieces


def exhaustive(cost: np.ndarray, units: int, least: int, most: int) -> float:
    """Least total over every subset of slots that forms ≤ most runs of ≥ least slots."""
    best = np.inf
    for chosen in itertools.combinations(range(len(cost)), units):
        runs, length, prev = [], 0, -2
        for s in chosen:
            if s == prev + 1:
                length += 1
            else:
                if length:
                    runs.append(length)
                length = 1
            prev = s
        runs.append(length)
        if len(runs) <= most and min(runs) >= least:
            best = min(best, float(cost[list(chosen)].sum()))
    return best


def test_two_valleys_beat_the_best_contiguous_window() -> None:
    values = [400.0] * 24
    values[3:5] = [100.0, 100.0]  # 03:00–05:00
    values[15:17] = [90.0, 90.0]  # 15:00–17:00
    s = hourly(values)
    pieces = best_pieces(s, T0, T0 + 24 * H, 4 * H, H, 2)
    pieces = check(pieces, T0, T0 + 24 * H, 4 * H, H, 2)
    assert [(a - T0) / H for a, _ in pieces.spans_s] == [3.0, 15.0]
    assert pieces.mean == pytest.approx(95.0)
    assert pieces.mean < best_window(s, T0, T0 + 24 * H, 4 * H).mean - 100


def test_one_piece_is_the_contiguous_optimum() -> None:
    rng = np.random.default_rng(11)
    s = hourly(rng.uniform(50, 500, 48))
    pieces = best_pieces(s, T0, T0 + 48 * H, 5 * H, H, 1)
    window = best_window(s, T0, T0 + 48 * H, 5 * H)
    assert len(pieces.spans_s) == 1
    assert pieces.mean == pytest.approx(window.mean)


@pytest.mark.parametrize("seed", range(6))
def test_programme_is_optimal_against_exhaustive_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = rng.uniform(0, 100, 11)
    units, least, most = 5, 2, 2
    pieces = best_pieces(hourly(values), T0, T0 + 11 * H, units * H, least * H, most)
    pieces = check(pieces, T0, T0 + 11 * H, units * H, least * H, most)
    assert pieces.mean * units == pytest.approx(exhaustive(values, units, least, most))


def test_minimum_chunk_forces_longer_pieces() -> None:
    values = [400.0] * 24
    for cheap in (2, 6, 10, 14):
        values[cheap] = 10.0  # isolated cheap hours
    pieces = best_pieces(hourly(values), T0, T0 + 24 * H, 4 * H, 2 * H, 4)
    pieces = check(pieces, T0, T0 + 24 * H, 4 * H, 2 * H, 4)
    assert len(pieces.spans_s) == 2  # two 2 h pieces, one cheap hour in each


def test_off_grid_start_and_odd_durations_stay_exact() -> None:
    rng = np.random.default_rng(5)
    s = hourly(rng.uniform(100, 300, 30))
    start, end = T0 + 0.5 * H, T0 + 29.25 * H
    pieces = best_pieces(s, start, end, 100 * 60.0, 25 * 60.0, 3)
    pieces = check(pieces, start, end, 100 * 60.0, 25 * 60.0, 3)
    integral = Integral(s, start, end)
    total = sum(float(integral.at(b) - integral.at(a)) for a, b in pieces.spans_s)
    assert pieces.mean == pytest.approx(total / 6000.0)
    assert pieces.note == ""


def test_coarse_grid_trims_to_the_duration_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slots, "STATE_BUDGET", 50)
    rng = np.random.default_rng(9)
    s = hourly(rng.uniform(100, 300, 48))
    pieces = best_pieces(s, T0, T0 + 48 * H, 100 * 60.0, 40 * 60.0, 2)
    pieces = check(pieces, T0, T0 + 48 * H, 100 * 60.0, 40 * 60.0, 2)
    assert pieces.slot_s > 60.0
    assert "trimmed" in pieces.note


def test_year_long_span_keeps_constraints() -> None:
    rng = np.random.default_rng(1)
    values = 300 + 150 * np.sin(np.arange(8760) / 24 * 2 * np.pi) + rng.normal(0, 40, 8760)
    s = hourly(values)
    pieces = best_pieces(s, T0, T0 + 8760 * H, 6 * H, 2 * H, 3)
    pieces = check(pieces, T0, T0 + 8760 * H, 6 * H, 2 * H, 3)
    assert pieces.mean <= best_window(s, T0, T0 + 8760 * H, 6 * H).mean + 1e-9


def test_a_grid_too_coarse_for_the_span_leaves_the_contiguous_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from datetime import datetime, timedelta, timezone

    from greenml.schedule.forecast import Forecast
    from greenml.schedule.job import Job
    from greenml.schedule.planner import plan_job

    monkeypatch.setattr(slots, "STATE_BUDGET", 1)
    s = hourly(np.full(6, 200.0))
    assert best_pieces(s, T0, T0 + 6000.0, 6000.0, 2400.0, 2) is None
    start = datetime.fromtimestamp(T0, tz=timezone.utc)
    job = Job(6000.0, start, start + timedelta(seconds=6000), interruptible=True,
              min_chunk_s=2400.0, max_pieces=2)  # fmt: skip
    plan = plan_job(job, ["A"], history_or_forecast={"A": Forecast.known("A", s, "t", "none")},
                    now=start)  # fmt: skip
    assert [(c.start, c.end) for c in plan.chunks] == [(start, start + timedelta(seconds=6000))]
