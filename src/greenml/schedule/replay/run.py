"""Replay of "Let's Wait Awhile" (Wiesner et al., Middleware 2021) on an intensity trace.

Jobs draw constant power on half-hour slots (see :mod:`replay_jobs` for the
two scenarios and :mod:`replay_series` for the grid). A shifted job is placed
on a *forecast*: the true series plus Gaussian noise of standard deviation
``error × mean``, averaged over ``repetitions`` draws; its emissions are always
counted on the true series. Non-interruptible jobs start where the forecast
mean over their duration is lowest; interruptible jobs take the
lowest-forecast slots of their window. The baseline starts each job at its
arrival. That is the paper's text (``rules="text"``); ``rules="wiesner2021"``
follows the published artifact's rules instead (:mod:`replay_wiesner2021`).
Everything is vectorized with numpy (:mod:`replay_place`): a year
of 3,387 jobs with ten forecast draws replays in a fraction of a second.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from greenml.errors import ConfigError
from greenml.schedule.replay.jobs import DEADLINE_RULES, DeadlineRule, JobSet, ml_jobs, nightly_jobs
from greenml.schedule.replay.place import baseline_sum, shifted_sums
from greenml.schedule.replay.series import SLOT_S, HalfHourTrace, load_half_hourly
from greenml.schedule.replay.wiesner2021 import (
    RULES,
    Rules,
    artifact_baseline_sum,
    artifact_forecasts,
    artifact_jobs,
    artifact_notes,
    check_no_gaps,
)

if TYPE_CHECKING:
    from greenml.accounting.trace_csv import Column

Scenario = Literal["nightly", "ml-jobs"]
SCENARIOS: tuple[Scenario, ...] = ("nightly", "ml-jobs")
NIGHTLY_WINDOWS_H = tuple(range(9))  # ±0 … ±8 h
ML_JOB_COUNT = 3387
REPETITIONS = 10
DEFAULT_POWER_W = 1000.0
MAX_WINDOW_H = 24


@dataclass(frozen=True)
class ReplayRow:
    """Baseline and shifted emissions of one set of jobs (one window for ``nightly``).

    ``savings_pct_range`` is the lowest and highest saving over the forecast
    draws (equal to ``savings_pct`` with a perfect forecast).
    """

    window_hours: int | None
    jobs: int
    jobs_left_out: int
    baseline_g: float
    shifted_g: float
    savings_pct: float
    savings_pct_range: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "savings_pct": self.savings_pct,
            "baseline_g": self.baseline_g,
            "shifted_g": self.shifted_g,
            "jobs": self.jobs,
            "jobs_left_out": self.jobs_left_out,
            "savings_pct_range": list(self.savings_pct_range),
        }
        if self.window_hours is not None:
            out = {"window_hours": self.window_hours, **out}
        return out


@dataclass(frozen=True)
class ReplayResult:
    """The replay of one scenario on one trace; ``rows[-1]`` is the headline row."""

    scenario: Scenario
    rows: tuple[ReplayRow, ...]
    trace: str
    source: str
    span: str
    tz: str
    interruptible: bool
    deadline: DeadlineRule | None
    error: float
    repetitions: int
    seed: int
    power_w: float
    notes: list[str] = field(default_factory=list)
    rules: Rules = "text"

    @property
    def headline(self) -> ReplayRow:
        """The widest window (``nightly``) or the only row (``ml-jobs``)."""
        return self.rows[-1]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``savings_pct``, ``baseline_g``, ``shifted_g``, ``jobs`` first."""
        row = self.headline.to_dict()
        row.pop("window_hours", None)
        out: dict[str, Any] = {
            **row,
            "scenario": self.scenario,
            "rules": self.rules,
            "method": "simulated constant-power jobs replayed on the true series; "
            f"placed on {self._forecast_text()}{self._rules_text()}",
            "trace": self.trace,
            "source": self.source,
            "span": self.span,
            "tz": self.tz,
            "interruptible": self.interruptible,
            "error": self.error,
            "repetitions": self.repetitions,
            "seed": self.seed,
            "power_w": self.power_w,
            "notes": list(self.notes),
        }
        if self.scenario == "nightly":
            out["window_hours"] = self.headline.window_hours
            out["windows"] = [r.to_dict() for r in self.rows]
        else:
            out["deadline"] = self.deadline
        return out

    def _forecast_text(self) -> str:
        if self.error == 0:
            return "a perfect forecast (the true series)"
        if self.rules == "wiesner2021":
            return (
                f"forecasts = true + Gaussian noise (sd {self.error:g} × mean of the series "
                f"from the year's start), {self.repetitions} draws averaged, draw i seeded i"
            )
        return (
            f"forecasts = true + Gaussian noise (sd {self.error:g} × series mean), "
            f"{self.repetitions} draws averaged"
        )

    def _rules_text(self) -> str:
        if self.rules == "text":
            return ""
        return (
            "; the published artifact's rules (wiesner2021): window one slot past the "
            "deadline, baseline the better of arrival or one slot later"
        )


def replay(
    path: str | Path,
    scenario: str,
    *,
    column: Column = "lifecycle",
    tz: str = "UTC",
    **options: Any,
) -> ReplayResult:
    """Read a trace and replay a scenario on it; see :func:`replay_trace` for the options.

    Raises:
        ConfigError: Bad trace or options, or no job fits inside the trace.
    """
    _check_scenario(scenario)
    return replay_trace(load_half_hourly(path, column=column, tz=tz), scenario, **options)


def replay_trace(
    trace: HalfHourTrace,
    scenario: str,
    *,
    window_hours: int | None = None,
    deadline: str | None = None,
    interruptible: bool = False,
    error: float = 0.0,
    seed: int = 0,
    repetitions: int = REPETITIONS,
    jobs: int = ML_JOB_COUNT,
    power_w: float = DEFAULT_POWER_W,
    rules: str = "text",
) -> ReplayResult:
    """Replay ``nightly`` (scenario I) or ``ml-jobs`` (scenario II) on a half-hour trace.

    Args:
        trace: The trace on the 30-minute grid.
        scenario: ``nightly`` or ``ml-jobs``.
        window_hours: ``nightly`` only: one window ±N h (default: every N in 0…8).
        deadline: ``ml-jobs`` only: ``next-workday`` (default) or ``semi-weekly``.
        interruptible: Jobs may run in any slots of their window.
        error: Forecast error e (noise sd = e × series mean); 0 is a perfect forecast.
        seed: Seed of the job draws and of the forecast noise.
        repetitions: Forecast draws averaged when ``error > 0``.
        jobs: ``ml-jobs`` only: how many jobs are drawn.
        power_w: The constant power of every job (grams scale with it).
        rules: ``text`` (the paper's text) or ``wiesner2021`` (the published
            artifact's rules, ``ml-jobs`` only; ``seed`` then seeds the jobs
            only and forecast draw ``i`` is seeded ``i``).

    Raises:
        ConfigError: An option out of range, or no job's window inside the trace.
    """
    import numpy as np

    _check_scenario(scenario)
    rule = _check_options(scenario, window_hours, deadline, error, repetitions, jobs, power_w)
    profile = _check_rules(scenario, rules)
    reps = repetitions if error > 0 else 1
    if profile == "wiesner2021":
        return _replay_artifact(
            trace, rule or "next-workday", interruptible, error, seed, reps, jobs, power_w
        )
    job_rng, noise_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    if scenario == "nightly":
        windows = NIGHTLY_WINDOWS_H if window_hours is None else (window_hours,)
        widest = nightly_jobs(trace, max(windows))
        sets: list[tuple[int | None, JobSet]] = [(w, _narrowed(widest, w)) for w in windows]
    else:
        sets = [(None, ml_jobs(trace, jobs, rule or "next-workday", job_rng))]
    if len(sets[-1][1]) == 0:
        raise ConfigError(_no_job_message(trace, scenario, sets[-1][0], rule))
    true = trace.values
    g_per_unit = power_w * SLOT_S / 3.6e6  # grams per (g/kWh × slot)
    forecasts = true[None, :]
    if error > 0:
        sd = error * float(np.nanmean(true))
        forecasts = true + noise_rng.normal(0.0, sd, (reps, len(true)))
    shifted = [shifted_sums(true, forecasts, js, interruptible).sum(axis=1) for _, js in sets]
    rows = []
    for i, (w, job_set) in enumerate(sets):
        base = float(baseline_sum(true, job_set).sum()) * g_per_unit
        per_rep = shifted[i] * g_per_unit
        savings = 100.0 * (base - per_rep) / base if base > 0 else np.zeros(reps)
        rows.append(ReplayRow(
            w, len(job_set), job_set.left_out, base, float(per_rep.mean()),
            float(savings.mean()), (float(savings.min()), float(savings.max())),
        ))  # fmt: skip
    notes = []
    if scenario == "nightly" and interruptible:
        notes.append("a 30-minute job is one slot: interruptible and not are the same")
    chosen: Scenario = "nightly" if scenario == "nightly" else "ml-jobs"
    return ReplayResult(
        chosen, tuple(rows), trace.name, trace.source, trace.span(), trace.tz, interruptible,
        rule, error, reps, seed, power_w, notes,
    )  # fmt: skip


def _replay_artifact(
    trace: HalfHourTrace,
    rule: DeadlineRule,
    interruptible: bool,
    error: float,
    seed: int,
    reps: int,
    count: int,
    power_w: float,
) -> ReplayResult:
    """Scenario II under the published artifact's rules (:mod:`replay_wiesner2021`)."""
    drawn = artifact_jobs(trace, count, rule, seed)
    if len(drawn.jobs) == 0:
        raise ConfigError(
            f"trace {trace.name} covers {trace.span()}; no ml-jobs job fits: --rules "
            f"wiesner2021 draws jobs on the workdays of {drawn.year} the trace covers "
            f"(09:00 to 16:30, {trace.tz})"
        )
    check_no_gaps(trace, drawn.first_slot, drawn.year)
    true = trace.values
    g_per_unit = power_w * SLOT_S / 3.6e6
    forecasts = artifact_forecasts(true, error, reps, drawn.first_slot)
    per_rep = shifted_sums(true, forecasts, drawn.jobs, interruptible).sum(axis=1) * g_per_unit
    base = float(artifact_baseline_sum(true, drawn.jobs).sum()) * g_per_unit
    savings = 100.0 * (base - per_rep) / base if base > 0 else 0.0 * per_rep
    row = ReplayRow(
        None, len(drawn.jobs), 0, base, float(per_rep.mean()),
        float(savings.mean()), (float(savings.min()), float(savings.max())),
    )  # fmt: skip
    notes = [f"jobs drawn over the workdays of {drawn.year} ({trace.tz}) only, none dropped"]
    notes += artifact_notes(drawn, trace)
    return ReplayResult(
        "ml-jobs", (row,), trace.name, trace.source, trace.span(), trace.tz, interruptible,
        rule, error, reps, seed, power_w, notes, "wiesner2021",
    )  # fmt: skip


def _check_rules(scenario: str, rules: str) -> Rules:
    if rules not in RULES:
        raise ConfigError(f"unknown rules {rules!r}: use {' or '.join(RULES)}")
    if rules == "wiesner2021" and scenario != "ml-jobs":
        raise ConfigError("--rules wiesner2021 applies to --scenario ml-jobs only")
    return rules  # type: ignore[return-value]


def _narrowed(widest: JobSet, window_hours: int) -> JobSet:
    """The same nightly jobs with a narrower window."""
    w = 2 * window_hours
    return JobSet(
        widest.arrival, widest.duration, widest.arrival - w, widest.arrival + w + 1,
        widest.left_out,
    )  # fmt: skip


def _check_scenario(scenario: str) -> None:
    if scenario not in SCENARIOS:
        raise ConfigError(f"unknown scenario {scenario!r}: use {' or '.join(SCENARIOS)}")


def _check_options(
    scenario: str,
    window_hours: int | None,
    deadline: str | None,
    error: float,
    repetitions: int,
    jobs: int,
    power_w: float,
) -> DeadlineRule | None:
    """The deadline rule to use; ConfigError for an option out of range or of the other scenario."""
    if not (math.isfinite(error) and error >= 0):
        raise ConfigError(f"--error must be a number ≥ 0 (e.g. 0.05), not {error}")
    if repetitions < 1:
        raise ConfigError(f"--repetitions must be at least 1, not {repetitions}")
    if not (math.isfinite(power_w) and power_w > 0):
        raise ConfigError(f"--power-w must be a positive number of watts, not {power_w}")
    if scenario == "nightly":
        if deadline is not None:
            raise ConfigError(
                "--deadline applies to --scenario ml-jobs; nightly uses --window-hours"
            )
        if window_hours is not None and not 0 <= window_hours <= MAX_WINDOW_H:
            raise ConfigError(f"--window-hours must be 0 to {MAX_WINDOW_H}, not {window_hours}")
        return None
    if window_hours is not None:
        raise ConfigError("--window-hours applies to --scenario nightly; ml-jobs uses --deadline")
    if jobs < 1:
        raise ConfigError(f"--jobs must be at least 1, not {jobs}")
    rule = deadline or "next-workday"
    if rule not in DEADLINE_RULES:
        raise ConfigError(f"unknown deadline rule {rule!r}: use {' or '.join(DEADLINE_RULES)}")
    return rule  # type: ignore[return-value]


def _no_job_message(
    trace: HalfHourTrace, scenario: str, window_hours: int | None, rule: str | None
) -> str:
    if scenario == "nightly":
        need = f"a day with 01:00 ± {window_hours} h ({trace.tz}) inside it and without gaps"
    else:
        need = (
            "a workday 09:00 arrival plus 4 h to 89.5 h of work and the "
            f"{rule} deadline ({trace.tz}) inside it and without gaps"
        )
    return f"trace {trace.name} covers {trace.span()}; no {scenario} job fits: each needs {need}"
