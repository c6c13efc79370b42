"""The "Let's Wait Awhile" replay: grid, calendar, job rules, placement and savings."""

from __future__ import annotations

import itertools
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from greenml.errors import ConfigError
from greenml.schedule.replay.jobs import JobSet, ml_jobs, nightly_jobs
from greenml.schedule.replay.place import baseline_sum, best_starts, shifted_sums
from greenml.schedule.replay.run import replay, replay_trace
from greenml.schedule.replay.series import (
    SLOT_S,
    HalfHourTrace,
    half_hourly,
    load_half_hourly,
    local_calendar,
)

SHARED = Path(__file__).parents[3].parent / "shared" / "data" / "carbon_intensity"
DE_2023 = SHARED / "DE-LU_2023_hourly.csv"
needs_shared = pytest.mark.skipif(not DE_2023.exists(), reason=f"no shared data at {SHARED}")


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def make_trace(values: Any, start: str = "2024-01-01 00:00", tz: str = "UTC") -> HalfHourTrace:
    """A half-hour trace from slot values (2024-01-01 is a Monday)."""
    v = np.asarray(values, dtype=np.float64)
    t0 = utc(start)
    weekday, minute = local_calendar(t0, len(v) + 1, tz)
    return HalfHourTrace(t0, v, weekday, minute, "synthetic", "synthetic trace", tz)


def daily_pattern(days: int, seed: int = 1) -> np.ndarray:
    """Half-hourly intensity with a daily solar dip, a weekly swing and noise."""
    rng = np.random.default_rng(seed)
    slot = np.arange(days * 48)
    hour = (slot % 48) / 2
    solar = np.clip(np.sin((hour - 6) / 12 * np.pi), 0, None)
    weekly = 30 * np.sin(slot / (48 * 7) * 2 * np.pi)
    return 400 - 200 * solar + weekly + rng.normal(0, 15, len(slot))


class FixedDraws:
    """An rng that hands out given draws, in the order ml_jobs asks for them."""

    def __init__(self, *draws: list[int]) -> None:
        self.draws = [np.asarray(d) for d in draws]

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        out = self.draws.pop(0)
        assert len(out) == size and np.all((out >= low) & (out < high))
        return out


# ----------------------------------------------------------------------------- the grid


def test_hourly_values_hold_for_both_half_hours() -> None:
    t = utc("2023-05-01 00:00") + 3600 * np.arange(3)
    start, v = half_hourly(t, [100.0, 200.0, 300.0], t[-1] + 3600)
    assert start == t[0]
    assert v.tolist() == [100, 100, 200, 200, 300, 300]


def test_finer_traces_are_reduced_to_the_00_and_30_points() -> None:
    t = utc("2023-05-01 00:15") + 900 * np.arange(8)  # 00:15 … 02:00, every 15 min
    values = 10.0 * np.arange(8)  # 00:15→0, 00:30→10, 00:45→20, 01:00→30, …
    start, v = half_hourly(t, values, t[-1] + 900)
    assert start == utc("2023-05-01 00:30")  # the first :00/:30 point inside
    assert v.tolist() == [10, 30, 50]  # 00:30, 01:00, 01:30 (02:00 ends too early)


def test_gap_slots_are_nan_not_filled() -> None:
    t = utc("2023-05-01 00:00") + 3600 * np.array([0, 1, 5, 6])
    _, v = half_hourly(t, [1.0, 2.0, 3.0, 4.0], t[-1] + 3600, [(t[1] + 3600, t[2])])
    assert np.isnan(v[4:10]).all()  # 02:00–05:00 has no data
    assert v[:4].tolist() == [1, 1, 2, 2] and v[10:].tolist() == [3, 3, 4, 4]


def test_local_calendar_follows_daylight_saving() -> None:
    # 2023-03-26: Berlin moves from +01:00 to +02:00 at 01:00 UTC.
    weekday, minute = local_calendar(utc("2023-03-25 22:00"), 8, "Europe/Berlin")
    assert minute.tolist() == [23 * 60, 23 * 60 + 30, 0, 30, 60, 90, 3 * 60, 3 * 60 + 30]
    assert weekday.tolist() == [5, 5, 6, 6, 6, 6, 6, 6]  # Saturday, then Sunday
    with pytest.raises(ConfigError, match="unknown time zone"):
        local_calendar(0.0, 2, "Mars/Olympus")


def test_plain_time_carbon_intensity_csv_is_read(tmp_path: Path) -> None:
    path = tmp_path / "plain.csv"
    rows = [f"2023-05-01T{h:02d}:00:00Z,{100 + h}" for h in range(24)]
    path.write_text("Time,Carbon Intensity\n" + "\n".join(rows) + "\n")
    trace = load_half_hourly(path)
    assert trace.n == 48 and trace.values[0] == 100 and trace.values[-1] == 123
    assert "plain.csv" in trace.source


# ----------------------------------------------------------------------------- the jobs


def test_nightly_jobs_start_at_local_one_am_and_drop_days_outside() -> None:
    trace = make_trace(np.full(48 * 5, 100.0), start="2024-01-01 00:00", tz="Europe/Berlin")
    jobs = nightly_jobs(trace, window_hours=8)
    # 01:00 Berlin is 00:00 UTC: days 2–5 fit ±8 h only from the second night on
    assert all(trace.minute[a] == 60 for a in jobs.arrival)
    assert (jobs.earliest >= 0).all() and (jobs.deadline <= trace.n).all()
    assert (jobs.deadline - jobs.earliest == 33).all() and (jobs.duration == 1).all()
    assert len(jobs) + jobs.left_out == 5


def test_next_workday_rule_on_known_cases() -> None:
    trace = make_trace(np.full(48 * 21, 100.0))  # three weeks from Monday 2024-01-01
    # Mon 09:00 + 4 h → Mon 13:00 (in hours: no slack)
    # Fri 16:30 + 4 h → Fri 20:30 → Mon 09:00
    # Tue 12:00 + 20 h → Wed 08:00 → Wed 09:00 (before 09:00: the same day's 09:00)
    # Wed 09:00 + 80 h → Sat 17:00 → Mon 09:00
    # Thu 13:00 + 4 h → Thu 17:00 (17:00 is not after 17:00: no slack)
    draws = FixedDraws([0, 4, 1, 2, 3], [0, 15, 6, 0, 8], [8, 8, 40, 160, 8])
    jobs = ml_jobs(trace, 5, "next-workday", draws)  # type: ignore[arg-type]
    day = 48
    monday2 = 7 * day + 18
    assert jobs.arrival.tolist() == [18, 4 * day + 33, day + 24, 2 * day + 18, 3 * day + 26]
    assert jobs.deadline.tolist() == [26, monday2, 2 * day + 18, monday2, 3 * day + 34]
    assert (jobs.earliest == jobs.arrival).all() and jobs.left_out == 0


def test_semi_weekly_rule_on_known_cases() -> None:
    trace = make_trace(np.full(48 * 21, 100.0))
    # Mon 13:00 → Thu 09:00; Fri 20:30 → Mon 09:00; Wed 08:00 → Thu 09:00
    draws = FixedDraws([0, 4, 1], [0, 15, 6], [8, 8, 40])
    jobs = ml_jobs(trace, 3, "semi-weekly", draws)  # type: ignore[arg-type]
    day = 48
    assert jobs.deadline.tolist() == [3 * day + 18, 7 * day + 18, 3 * day + 18]


def test_drawn_jobs_follow_the_rules_and_spread_over_workdays() -> None:
    trace = make_trace(np.full(48 * 70, 100.0))
    rng = np.random.default_rng(3)
    nw = ml_jobs(trace, 2000, "next-workday", rng)
    sw = ml_jobs(trace, 2000, "semi-weekly", np.random.default_rng(3))
    for jobs in (nw, sw):
        assert (trace.weekday[jobs.arrival] < 5).all()
        assert set(trace.minute[jobs.arrival]) == set(range(540, 1020, 30))
        assert jobs.duration.min() == 8 and jobs.duration.max() == 179
        assert (jobs.deadline >= jobs.arrival + jobs.duration).all()
    # every workday gets jobs, weekends none
    days = np.unique(jobs.arrival // 48)
    assert len(days) > 40 and all(trace.weekday[d * 48] < 5 for d in days)
    finish = nw.arrival + nw.duration
    slack = nw.deadline > finish
    assert (trace.minute[nw.deadline[slack]] == 540).all()
    assert (trace.weekday[nw.deadline[slack]] < 5).all()
    assert (trace.minute[sw.deadline] == 540).all()
    assert set(trace.weekday[sw.deadline]) <= {0, 3}
    # the same draws: a semi-weekly deadline is never earlier than the next-workday one
    common = {(a, d): dl for a, d, dl in zip(nw.arrival, nw.duration, nw.deadline, strict=True)}
    later = zip(sw.arrival, sw.duration, sw.deadline, strict=True)
    assert all(dl >= common[(a, d)] for a, d, dl in later)
    assert nw.left_out > 0 and len(nw) + nw.left_out == 2000  # jobs near the end are left out


def test_jobs_over_a_gap_are_left_out() -> None:
    values = np.full(48 * 14, 100.0)
    values[48 * 3 : 48 * 3 + 4] = np.nan  # Thursday 00:00–02:00 missing
    jobs = nightly_jobs(make_trace(values), window_hours=2)
    assert 3 * 48 + 2 not in jobs.arrival.tolist()
    assert len(jobs) == 12 and jobs.left_out == 2  # that night, and the first (no 23:00 before)


# ----------------------------------------------------------------------------- placement


def brute_force(true: np.ndarray, forecast: np.ndarray, jobs: JobSet, interruptible: bool) -> list:
    """A plain loop over every start (or every slot) per job."""
    out = []
    for a, d, dl in zip(jobs.earliest, jobs.duration, jobs.deadline, strict=True):
        if interruptible:
            slots = sorted(range(a, dl), key=lambda i: (forecast[i], i))[:d]
            out.append(sum(true[i] for i in slots))
        else:
            best = min(range(a, dl - d + 1), key=lambda s: (sum(forecast[s : s + d]), s))
            out.append(sum(true[best : best + d]))
    return out


@pytest.mark.parametrize("interruptible", [False, True])
def test_vectorized_placement_matches_a_plain_loop(interruptible: bool) -> None:
    rng = np.random.default_rng(7)
    true = rng.uniform(100, 500, 48 * 20)
    forecast = true + rng.normal(0, 40, len(true))
    trace = make_trace(true)
    jobs = ml_jobs(trace, 120, "semi-weekly", rng)
    got = shifted_sums(true, forecast, jobs, interruptible)[0]
    assert got == pytest.approx(brute_force(true, forecast, jobs, interruptible), rel=1e-9)
    base = baseline_sum(true, jobs)
    expected = [true[a : a + d].sum() for a, d in zip(jobs.arrival, jobs.duration, strict=True)]
    assert base == pytest.approx(expected)


def test_contiguous_start_stays_inside_the_window() -> None:
    rng = np.random.default_rng(2)
    true = rng.uniform(100, 500, 48 * 30)
    jobs = ml_jobs(make_trace(true), 300, "semi-weekly", rng)
    start = best_starts(true, jobs)[0]
    assert (start >= jobs.earliest).all() and (start + jobs.duration <= jobs.deadline).all()


# ----------------------------------------------------------------------------- savings


def test_nightly_saving_on_a_known_pattern() -> None:
    values = np.full(48 * 10, 300.0)
    values[(np.arange(len(values)) % 48) == 6] = 150.0  # 03:00 is clean every day
    result = replay_trace(make_trace(values), "nightly")
    by_window = {r.window_hours: r for r in result.rows}
    assert by_window[0].savings_pct == 0.0 and by_window[1].savings_pct == 0.0
    for w in range(2, 9):  # from ±2 h on 03:00 is reachable: 300 → 150
        assert by_window[w].savings_pct == pytest.approx(50.0)
    row = by_window[8]
    assert row.jobs == 9 and row.jobs_left_out == 1  # the first night has no evening before
    assert row.baseline_g == pytest.approx(9 * 300 * 0.5)  # 1 kW for 30 min at 300 g/kWh


def test_wider_windows_and_interruption_never_save_less_with_a_perfect_forecast() -> None:
    trace = make_trace(daily_pattern(120))
    nightly = [r.savings_pct for r in replay_trace(trace, "nightly").rows]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(nightly))
    assert nightly[-1] > 5
    saved = {
        (rule, i): replay_trace(trace, "ml-jobs", deadline=rule, interruptible=i, jobs=600)
        for rule in ("next-workday", "semi-weekly")
        for i in (False, True)
    }
    pct = {key: result.headline.savings_pct for key, result in saved.items()}
    for rule in ("next-workday", "semi-weekly"):
        assert pct[(rule, True)] >= pct[(rule, False)]
    assert pct[("semi-weekly", True)] > pct[("next-workday", True)]
    assert pct[("next-workday", False)] > 0


def test_forecast_error_costs_savings_and_is_seeded() -> None:
    trace = make_trace(daily_pattern(90))
    kwargs: dict[str, Any] = {"deadline": "semi-weekly", "interruptible": True, "jobs": 400}
    perfect = replay_trace(trace, "ml-jobs", **kwargs).headline
    noisy = replay_trace(trace, "ml-jobs", error=0.3, **kwargs)
    again = replay_trace(trace, "ml-jobs", error=0.3, **kwargs)
    other = replay_trace(trace, "ml-jobs", error=0.3, seed=1, **kwargs)
    assert noisy.repetitions == 10 and perfect.savings_pct_range[0] == perfect.savings_pct
    assert noisy.headline.savings_pct < perfect.savings_pct - 1
    low, high = noisy.headline.savings_pct_range
    assert low < noisy.headline.savings_pct < high
    assert noisy.headline.baseline_g == perfect.baseline_g  # emissions on the true series
    assert again.to_dict() == noisy.to_dict()
    assert other.headline.savings_pct != noisy.headline.savings_pct


def test_result_dict_has_the_cli_keys() -> None:
    data = replay_trace(make_trace(daily_pattern(30)), "nightly", window_hours=4).to_dict()
    assert list(data)[:4] == ["savings_pct", "baseline_g", "shifted_g", "jobs"]
    assert data["window_hours"] == 4 and [w["window_hours"] for w in data["windows"]] == [4]
    assert "perfect forecast" in data["method"]


# ----------------------------------------------------------------------------- bad input


def test_a_trace_too_short_names_its_span() -> None:
    trace = make_trace(np.full(48 * 2, 100.0))
    with pytest.raises(ConfigError, match=r"covers 2024-01-01 00:00 UTC to 2024-01-03 00:00 UTC"):
        replay_trace(trace, "ml-jobs", deadline="semi-weekly")


@pytest.mark.parametrize(
    ("scenario", "kwargs", "message"),
    [
        ("weekly", {}, "unknown scenario"),
        ("ml-jobs", {"error": -0.1}, "--error must be"),
        ("ml-jobs", {"error": float("nan")}, "--error must be"),
        ("ml-jobs", {"deadline": "monthly"}, "unknown deadline rule"),
        ("ml-jobs", {"window_hours": 3}, "--window-hours applies"),
        ("nightly", {"deadline": "semi-weekly"}, "--deadline applies"),
        ("nightly", {"window_hours": -1}, "--window-hours must be"),
        ("ml-jobs", {"jobs": 0}, "--jobs must be"),
        ("ml-jobs", {"power_w": 0.0}, "--power-w must be"),
        ("ml-jobs", {"repetitions": 0}, "--repetitions must be"),
    ],
)
def test_bad_options_are_config_errors(scenario: str, kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        replay_trace(make_trace(np.full(48 * 30, 100.0)), scenario, **kwargs)


# ----------------------------------------------------------------------------- real data


@needs_shared
def test_real_trace_replays_with_positive_savings() -> None:
    nightly = replay(DE_2023, "nightly", tz="Europe/Berlin")
    assert nightly.headline.jobs >= 360 and nightly.rows[0].savings_pct == 0.0
    assert nightly.headline.savings_pct > 3
    ml = replay(DE_2023, "ml-jobs", interruptible=True, error=0.05, tz="Europe/Berlin")
    assert ml.headline.jobs + ml.headline.jobs_left_out == 3387
    assert 0 < ml.headline.savings_pct < 50
    assert ml.headline.shifted_g == pytest.approx(
        ml.headline.baseline_g * (1 - ml.headline.savings_pct / 100)
    )
    assert SLOT_S == 1800.0
