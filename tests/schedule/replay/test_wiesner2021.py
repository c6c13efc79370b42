"""``--rules wiesner2021``: each of the published artifact's rules, pinned on hand-made traces."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.schedule.replay.jobs import JobSet, ml_jobs
from greenml.schedule.replay.place import best_starts
from greenml.schedule.replay.run import replay_trace
from greenml.schedule.replay.series import HalfHourTrace, local_calendar, local_days
from greenml.schedule.replay.wiesner2021 import (
    artifact_baseline_sum,
    artifact_deadline,
    artifact_forecasts,
    artifact_jobs,
)

DAY = 48


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def make_trace(values: Any, start: str = "2024-01-01 00:00", tz: str = "UTC") -> HalfHourTrace:
    """A half-hour trace from slot values (2024-01-01 is a Monday)."""
    v = np.asarray(values, dtype=np.float64)
    t0 = utc(start)
    weekday, minute = local_calendar(t0, len(v) + 1, tz)
    return HalfHourTrace(t0, v, weekday, minute, "synthetic", "synthetic trace", tz)


def daily_pattern(days: int, start_slot: int = 0, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    slot = np.arange(start_slot, start_slot + days * DAY)
    solar = np.clip(np.sin(((slot % DAY) / 2 - 6) / 12 * np.pi), 0, None)
    return 400 - 200 * solar + rng.normal(0, 15, len(slot))


def slot(day: int, hh_mm: str) -> int:
    """Boundary of day ``day`` (0 = Monday 2024-01-01) at ``hh:mm`` UTC."""
    h, m = (int(x) for x in hh_mm.split(":"))
    return day * DAY + h * 2 + m // 30


def deadline_of(finish: int, rule: str = "next-workday", tz: str = "UTC") -> int:
    day, minute = local_days(utc("2024-01-01 00:00"), 21 * DAY, tz)
    return int(artifact_deadline(day, minute, np.array([finish]), rule)[0])  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- deadlines


@pytest.mark.parametrize(
    ("finish", "deadline", "why"),
    [
        (slot(4, "17:30"), slot(5, "09:00"), "Friday evening → Saturday 09:00, not Monday"),
        (slot(4, "20:30"), slot(5, "09:00"), "Friday late → Saturday 09:00"),
        (slot(4, "17:00"), slot(4, "17:00"), "17:00 is not after 17:00: no slack"),
        (slot(1, "23:30"), slot(2, "09:00"), "a weekday evening → the next day's 09:00"),
        (slot(5, "14:00"), slot(7, "09:00"), "Saturday → Monday 09:00"),
        (slot(5, "08:00"), slot(7, "09:00"), "Saturday before 09:00 → Monday 09:00 too"),
        (slot(6, "20:00"), slot(7, "09:00"), "Sunday → the next calendar day's 09:00"),
        (slot(6, "08:00"), slot(7, "09:00"), "Sunday morning → Monday, not Sunday 09:00"),
        (slot(2, "08:00"), slot(2, "09:00"), "before 09:00 → 09:00 the same day"),
        (slot(0, "00:30"), slot(0, "09:00"), "just after midnight → 09:00 the same day"),
        (slot(2, "09:00"), slot(2, "09:00"), "09:00 is in hours: no slack"),
        (slot(1, "13:00"), slot(1, "13:00"), "in hours: no slack"),
    ],
)
def test_next_workday_deadline(finish: int, deadline: int, why: str) -> None:
    assert deadline_of(finish) == deadline, why


def test_the_text_rule_gives_the_friday_evening_finish_monday() -> None:
    """The contrast the profile exists for: same finish, the paper's text says Monday."""
    trace = make_trace(np.full(21 * DAY, 100.0))
    rng = FixedDraws([4], [15], [8])  # Friday 16:30 + 4 h → Friday 20:30
    text = ml_jobs(trace, 1, "next-workday", rng)  # type: ignore[arg-type]
    assert text.deadline.tolist() == [slot(7, "09:00")]
    assert deadline_of(slot(4, "20:30")) == slot(5, "09:00")


def test_deadlines_are_local_nine_across_a_daylight_saving_weekend() -> None:
    # 2024-03-31 (Sunday): Berlin moves to +02:00. Saturday 18:00 local → Monday 09:00 local.
    start = utc("2024-03-25 00:00")
    day, minute = local_days(start, 10 * DAY, "Europe/Berlin")
    saturday_18 = int(np.flatnonzero(((day + 3) % 7 == 5) & (minute == 18 * 60))[0])
    got = int(artifact_deadline(day, minute, np.array([saturday_18]), "next-workday")[0])
    assert start + got * 1800 == utc("2024-04-01 07:00")  # 09:00 CEST


def test_semi_weekly_is_the_texts_rule() -> None:
    assert deadline_of(slot(0, "13:00"), "semi-weekly") == slot(3, "09:00")
    assert deadline_of(slot(4, "20:30"), "semi-weekly") == slot(7, "09:00")
    assert deadline_of(slot(3, "09:00"), "semi-weekly") == slot(3, "09:00")


class FixedDraws:
    """An rng that hands out given draws, in the order ml_jobs asks for them."""

    def __init__(self, *draws: list[int]) -> None:
        self.draws = [np.asarray(d) for d in draws]

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        return self.draws.pop(0)


# ----------------------------------------------------------------------------- the window


def pick(jobs: JobSet, which: Any) -> JobSet:
    return JobSet(
        jobs.arrival[which], jobs.duration[which], jobs.earliest[which], jobs.deadline[which], 0
    )


def test_window_is_duration_plus_slack_plus_one_slot() -> None:
    trace = make_trace(np.full(8 * 7 * DAY, 100.0))
    drawn = artifact_jobs(trace, 500, "next-workday", seed=4)
    jobs = drawn.jobs
    day, minute = local_days(trace.start_s, trace.n + 400, trace.tz)
    finish = jobs.arrival + jobs.duration
    slack = artifact_deadline(day, minute, finish, "next-workday") - finish
    whole = finish + slack + 1 <= trace.n  # windows the trace's end does not cut
    assert drawn.cut == int((~whole).sum()) and whole.sum() > 400
    slack, jobs = slack[whole], pick(jobs, whole)
    assert (slack >= 0).all() and (slack > 0).any() and (slack == 0).any()
    assert (jobs.earliest == jobs.arrival).all()
    assert (jobs.deadline - jobs.arrival == jobs.duration + slack + 1).all()
    # a non-interruptible job chooses among slack + 2 starts
    assert (jobs.deadline - jobs.duration - jobs.earliest + 1 == slack + 2).all()


def test_a_job_may_end_one_slot_after_its_deadline() -> None:
    trace = make_trace(np.full(3 * 7 * DAY, 100.0))
    jobs = artifact_jobs(trace, 200, "next-workday", seed=0).jobs
    i = int(np.argmax(jobs.deadline - jobs.arrival - jobs.duration > 1))  # a job with slack
    one = pick(jobs, slice(i, i + 1))
    deadline = int(one.deadline[0]) - 1  # the rule's deadline; the window ends a slot later
    forecast = np.full(trace.n, 300.0)
    forecast[deadline] = 10.0  # only the extra slot is clean
    start = int(best_starts(forecast, one)[0, 0])
    assert start + int(one.duration[0]) == deadline + 1
    assert start == int(one.arrival[0]) + (deadline - int(one.arrival[0] + one.duration[0])) + 1


# ----------------------------------------------------------------------------- the baseline


def test_baseline_is_the_better_of_arrival_or_one_slot_later() -> None:
    true = np.array([50.0, 500, 100, 100, 100, 100, 10, 1, 1, 1])
    jobs = JobSet(np.array([1, 4]), np.array([3, 3]), np.array([1, 4]), np.array([9, 9]), 0)
    # job 0 at 1: 700; one slot later at 2: 300 → 300 (later starts, cheaper still, are not tried)
    # job 1 at 4: 210; at 5: 111 → 111
    assert artifact_baseline_sum(true, jobs).tolist() == [300.0, 111.0]
    early = np.array([1.0, 1, 1, 900, 0, 0])
    one = JobSet(np.array([0]), np.array([3]), np.array([0]), np.array([6]), 0)
    assert artifact_baseline_sum(early, one).tolist() == [3.0]  # arrival wins over 902


def test_the_text_baseline_starts_at_arrival_and_wiesner2021_may_not() -> None:
    trace = make_trace(daily_pattern(70))
    kwargs: dict[str, Any] = {"jobs": 400, "deadline": "next-workday"}
    art = replay_trace(trace, "ml-jobs", rules="wiesner2021", **kwargs).headline
    # zero slack ⇒ the baseline is never above starting every job at arrival
    drawn = artifact_jobs(trace, 400, "next-workday", seed=0).jobs
    c = np.concatenate(([0.0], np.cumsum(trace.values)))
    at_arrival = float((c[drawn.arrival + drawn.duration] - c[drawn.arrival]).sum())
    g = 1000 * 1800 / 3.6e6
    assert art.baseline_g == pytest.approx(
        float(artifact_baseline_sum(trace.values, drawn).sum()) * g
    )
    assert art.baseline_g < at_arrival * g


# ----------------------------------------------------------------------------- the draws


def test_repetition_i_uses_default_rng_i_with_the_years_mean() -> None:
    true = np.arange(1.0, 101.0)
    first = 20
    f = artifact_forecasts(true, 0.05, 3, first)
    sd = 0.05 * true[first:].mean()
    for i in range(3):
        expected = true[first:] + np.random.default_rng(i).normal(0.0, sd, 80)
        assert f[i, first:] == pytest.approx(expected, abs=0)
        assert (f[i, :first] == true[:first]).all()  # before the year: no noise
    assert artifact_forecasts(true, 0.0, 3, first).shape == (1, 100)


def test_error_draws_are_the_same_twice_and_not_the_text_profiles() -> None:
    trace = make_trace(daily_pattern(70))
    kwargs: dict[str, Any] = {"jobs": 300, "interruptible": True, "error": 0.3}
    a = replay_trace(trace, "ml-jobs", rules="wiesner2021", **kwargs)
    b = replay_trace(trace, "ml-jobs", rules="wiesner2021", **kwargs)
    assert a.to_dict() == b.to_dict() and a.to_dict()["rules"] == "wiesner2021"
    low, high = a.headline.savings_pct_range
    assert low < high  # ten different draws
    text = replay_trace(trace, "ml-jobs", **kwargs)
    assert text.to_dict()["rules"] == "text"
    assert text.headline.savings_pct_range != a.headline.savings_pct_range
    # --seed moves the jobs, not the forecast draws (draw i is always seeded i)
    other = artifact_jobs(trace, 300, "next-workday", seed=1).jobs
    assert (
        other.arrival.tolist() != artifact_jobs(trace, 300, "next-workday", 0).jobs.arrival.tolist()
    )


def test_jobs_follow_the_artifacts_draw_order() -> None:
    """The artifact's generator, written as a plain loop over the year's days."""
    trace = make_trace(np.full(DAY * 366, 100.0))  # 2024 (a leap year), UTC
    got = artifact_jobs(trace, 700, "next-workday", seed=0).jobs
    rng = np.random.default_rng(0)
    days = [date(2024, 1, 1) + timedelta(days=k) for k in range(366)]
    workdays = [d for d in days if d.weekday() < 5 and d <= date(2024, 12, 31)]
    per_day = rng.multinomial(700, [1 / len(workdays)] * len(workdays))
    arrivals = []
    for d, k in zip(workdays, per_day, strict=True):
        minutes = np.sort(rng.choice(range(540, 1020, 30), size=int(k)))
        arrivals += [(d - date(2024, 1, 1)).days * DAY + int(m) // 30 for m in minutes]
    durations = rng.choice(range(240, 5400, 30), size=700) // 30
    assert got.arrival.tolist() == arrivals
    end_ok = got.arrival + durations <= trace.n
    assert (got.duration[end_ok] == durations[end_ok]).all()


# ----------------------------------------------------------------------------- the year


def test_jobs_only_within_the_calendar_year_and_none_dropped() -> None:
    # 2023-12-04 … 2024-01-29 (Mondays), midpoint in January 2024: the year is 2024
    start = "2023-12-04 00:00"
    trace = make_trace(np.full(8 * 7 * DAY, 100.0), start=start)
    drawn = artifact_jobs(trace, 600, "next-workday", seed=0)
    jobs = drawn.jobs
    assert drawn.year == 2024 and len(jobs) == 600 and jobs.left_out == 0
    first_2024 = 4 * 7 * DAY  # 2024-01-01 00:00
    assert drawn.first_slot == first_2024
    assert (jobs.arrival >= first_2024).all()
    assert (jobs.deadline <= trace.n).all() and (jobs.arrival + jobs.duration <= trace.n).all()
    assert drawn.cut > 0 and drawn.truncated > 0  # the trace ends on 2024-01-29
    # the text profile, on the same trace, draws over December too and leaves jobs out
    text = ml_jobs(trace, 600, "next-workday", np.random.default_rng(0))
    assert (text.arrival < first_2024).any() and text.left_out > 0
    result = replay_trace(trace, "ml-jobs", rules="wiesner2021", jobs=600)
    assert result.headline.jobs == 600 and result.headline.jobs_left_out == 0
    assert any("cut there" in note for note in result.notes)


def test_a_gap_is_an_error_not_a_dropped_job() -> None:
    values = daily_pattern(28)
    values[DAY * 10 : DAY * 10 + 3] = np.nan
    with pytest.raises(ConfigError, match="drops no job of 2024"):
        replay_trace(make_trace(values), "ml-jobs", rules="wiesner2021", jobs=50)


@pytest.mark.parametrize(
    ("scenario", "rules", "message"),
    [
        ("nightly", "wiesner2021", "applies to --scenario ml-jobs"),
        ("ml-jobs", "paper", "unknown rules"),
    ],
)
def test_bad_rules_are_config_errors(scenario: str, rules: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        replay_trace(make_trace(daily_pattern(28)), scenario, rules=rules)


# ----------------------------------------------------------------------------- the CLI


@pytest.fixture
def csv(tmp_path: Path) -> Path:
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    values = daily_pattern(42)[::2]
    rows = [f"{(t0 + timedelta(hours=h)).isoformat()},{v:.2f}" for h, v in enumerate(values)]
    path = tmp_path / "trace.csv"
    path.write_text("Time,Carbon Intensity\n" + "\n".join(rows) + "\n")
    return path


def test_cli_json_says_which_rules_applied(csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["plan", "replay", "--intensity-trace", str(csv), "--scenario", "ml-jobs",
            "--deadline", "next-workday", "--interruptible", "--error", "0.05",
            "--jobs", "200"]  # fmt: skip
    assert main([*base, "--rules", "wiesner2021", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rules"] == "wiesner2021" and data["jobs"] == 200 and data["jobs_left_out"] == 0
    assert "published artifact" in data["method"]
    assert main([*base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rules"] == "text"
    assert main([*base, "--rules", "wiesner2021"]) == 0
    assert "wiesner2021" in capsys.readouterr().out
    code = main(["plan", "replay", "--intensity-trace", str(csv), "--scenario", "nightly",
                 "--rules", "wiesner2021"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("greenml: error: ") and err.count("\n") == 1
