"""The plan behind ``greenml wait --until-green`` and ``greenml run --when green``.

The user's words (a deadline, a duration, a zone or region, a trace or a
provider) become a :class:`~greenml.schedule.job.Job` and an intensity
forecast, and :func:`greenml.schedule.planner.plan_job` places the job. Hourly
data is required: a zone's yearly mean cannot say *when* is greener, so that
case is an error with a hint, never a silent "start now".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.accounting import static
from greenml.accounting.traces import load_trace
from greenml.errors import ConfigError
from greenml.quantities.durations import clock_text, utc_text
from greenml.schedule import sources
from greenml.schedule.job import Job
from greenml.schedule.planner import plan_job
from greenml.schedule.profile import has_profile
from greenml.schedule.timeparse import parse_duration_s, parse_instant
from greenml.store import open_store

if TYPE_CHECKING:
    from greenml.schedule.job import Job
    from greenml.schedule.planner import Plan

_FORECASTER_HISTORY_S = 42 * 86400.0  # the least history the seasonal forecaster fits on
_PROFILE_HISTORY_S = 86400.0  # the least a zone's packaged typical profile is scaled to
NEEDS_HOURLY = (
    "waiting for green needs hourly intensities: pass --intensity-trace CSV (the zone's "
    "history, 42 days or more, a day or more for a zone greenml has a typical profile of, "
    "or a forecast) or --intensity-provider electricitymaps|watttime|ukci"
)


@dataclass(frozen=True)
class GreenRequest:
    """What the user asked for, as typed (parsed by :func:`make_plan`)."""

    deadline: str | None = None
    duration: str | None = None
    earliest_start: str | None = None
    zone: str | None = None
    region: str | None = None
    intensity_trace: str | None = None
    intensity_provider: str | None = None
    interruptible: bool = False
    min_chunk: str | None = None
    max_pieces: int | None = None
    max_wait: str | None = None
    name: str | None = None
    db_url: str | None = None
    when: str = "green"


@dataclass(frozen=True)
class GreenPlan:
    """A planned start (and chunks), with where the figures come from."""

    plan: Plan
    job: Job
    chunks_s: list[tuple[float, float]]
    duration_source: str
    notes: list[str] = field(default_factory=list)

    @property
    def start_s(self) -> float:
        return self.chunks_s[0][0]

    @property
    def interruptible(self) -> bool:
        return self.job.interruptible

    def to_dict(self) -> dict[str, Any]:
        """The planner's plan, plus the duration's source and these notes."""
        return {
            **self.plan.to_dict(),
            "duration_s": self.job.duration_s,
            "duration_source": self.duration_source,
            "interruptible": self.job.interruptible,
            "deadline": _iso(self.job.deadline_s),
            "wait_notes": list(self.notes),
        }

    def describe(self, now_s: float, dry_run: bool = False) -> list[str]:
        """The plan in a few lines for stderr; the first says when, and on what forecast."""
        p = self.plan
        low, high = (pct_text(x) for x in p.saving_pct_interval)
        spread = f" [{low}–{high}]" if low != high else ""
        verb = "would start" if dry_run else "starts"
        lines = [
            f"{verb} {utc_text(self.start_s)} (in {clock_text(self.start_s - now_s)}) in "
            f"{p.location}: {p.mean_intensity_g_per_kwh:.0f} g/kWh expected vs "
            f"{p.baseline_mean_intensity_g_per_kwh:.0f} starting now, "
            f"saving {pct_text(p.saving_pct)} %{spread}",
            f"forecast: {p.forecast_source}; {p.uncertainty}",
            f"duration {self.duration_text()}; deadline {utc_text(self.job.deadline_s)}",
        ]
        if len(self.chunks_s) > 1:
            pieces = ", ".join(f"{utc_text(a)}–{utc_text(b)[11:]}" for a, b in self.chunks_s)
            lines.append(f"{len(self.chunks_s)} pieces, paused in between: {pieces}")
        lines += [f"note: {n}" for n in (*p.notes, *self.notes)]
        return lines

    def headline(self, now_s: float) -> str:
        """One line: when it starts, the saving, and the forecast it rests on."""
        line = f"{self.describe(now_s)[0]} (forecast: {self.plan.forecast_source})"
        if self.duration_source != "--duration":
            line += f"; duration {self.duration_text()}"
        if len(self.chunks_s) > 1:
            line += f"; {len(self.chunks_s)} pieces, paused in between"
        return line

    def duration_text(self) -> str:
        """``3:00:00 (--duration)`` or ``… (from the previous run … named …)``."""
        return f"{clock_text(self.job.duration_s)} ({self.duration_source})"

    def countdown_detail(self) -> str:
        p = self.plan
        plan, now = p.mean_intensity_g_per_kwh, p.baseline_mean_intensity_g_per_kwh
        return f"{plan:.0f} g/kWh vs {now:.0f} now"

    def summary_lines(self, executed: dict[str, Any]) -> list[str]:
        """What was carried out, after the run."""
        p = self.plan
        lines = [
            f"schedule: waited {clock_text(executed.get('waited_s', 0.0))} for the planned start; "
            f"forecast {self.countdown_detail()}, saving {pct_text(p.saving_pct)} %"
        ]
        pauses = executed.get("pauses")
        if pauses:
            lines.append(
                f"          paused {len(pauses)}× for {clock_text(executed.get('paused_s', 0.0))} "
                "(SIGSTOP/SIGCONT)"
            )
        if executed.get("abandoned"):
            lines.append(f"          plan abandoned: {executed['abandoned']}")
        return lines


def make_plan(request: GreenRequest, now_s: float) -> GreenPlan:
    """Parse the request, build the forecast, and plan the job.

    Raises:
        ConfigError: A missing or malformed deadline or duration, a zero or
            negative duration, an unknown zone or region, no hourly data, or
            what the planner refuses (a deadline too early, data that does not
            cover the window, naming the missing span).
    """
    if request.deadline is None:
        raise ConfigError("--deadline is required to wait for green (e.g. --deadline +12h)")
    deadline_s = parse_time_s(request.deadline, now_s, "--deadline")
    earliest_s = now_s
    if request.earliest_start is not None:
        earliest_s = max(now_s, parse_time_s(request.earliest_start, now_s, "--earliest-start"))
    duration_s, duration_source = _duration(request)
    notes = []
    if request.max_wait is not None:
        cap_s = earliest_s + parse_duration_s(request.max_wait, "--max-wait", allow_zero=True)
        if cap_s + duration_s < deadline_s:
            deadline_s = cap_s + duration_s
            notes.append(f"--max-wait {request.max_wait}: the job starts by {_iso(cap_s)}")
    if not request.interruptible and (request.min_chunk or request.max_pieces is not None):
        raise ConfigError("--min-chunk and --max-pieces apply to --interruptible")
    job = Job(
        duration_s, _utc(earliest_s), _utc(deadline_s), interruptible=request.interruptible,
        min_chunk_s=parse_duration_s(request.min_chunk, "--min-chunk") if request.min_chunk
        else 1800.0,
        max_pieces=request.max_pieces,
    )  # fmt: skip
    location, data = forecast_input(request, earliest_s, deadline_s)
    plan = plan_job(job, [location], history_or_forecast={location: data}, now=_utc(now_s))
    if plan.chunks[0].start.timestamp() > earliest_s and plan.saving_pct_interval[0] <= 0:
        notes.append(_no_sure_saving(plan))
        now_job = Job(duration_s, _utc(earliest_s), _utc(earliest_s + duration_s))
        plan = plan_job(now_job, [location], history_or_forecast={location: data}, now=_utc(now_s))
    chunks = [(c.start.timestamp(), c.end.timestamp()) for c in plan.chunks]
    return GreenPlan(plan, job, chunks, duration_source, notes)


def _no_sure_saving(plan: Plan) -> str:
    """Why a shifted plan is dropped for "start now": its interval includes no saving."""
    low, high = (pct_text(x) for x in plan.saving_pct_interval)
    return (
        f"starting now: waiting until {plan.start:%Y-%m-%d %H:%M} UTC would save "
        f"{pct_text(plan.saving_pct)} % but its {pct_text(100 * plan.interval_level)} % interval "
        f"[{low}–{high} %] includes no saving"
    )


def pct_text(value: float) -> str:
    """A percentage rounded to a whole number, never ``-0``."""
    return str(round(value))


def forecast_input(request: GreenRequest, start_s: float, end_s: float) -> tuple[str, Any]:
    """(location, forecast or history) for the planner, from a trace or a provider.

    A trace that covers the whole window is taken as a forecast (its values as
    known); otherwise it is the history the planner's seasonal forecaster fits.
    """
    if request.zone and request.region:
        raise ConfigError("give --zone or --region, not both")
    location = (request.zone or request.region or "").strip()
    if request.intensity_trace:
        trace = load_trace(request.intensity_trace, location=location or None)
        location = location or trace.provenance.location
        s = trace.series
        if s.start_s <= start_s and s.end_s >= end_s and not trace.gaps:
            return location, sources.trace_forecast(location, trace, start_s, end_s)
        least_s = _PROFILE_HISTORY_S if has_profile(location) else _FORECASTER_HISTORY_S
        if s.end_s > start_s and start_s - s.start_s < least_s:
            trace.intensity(start_s, end_s)  # a forecast file too short: names the missing span
        return location, trace.intensity(s.start_s, s.end_s)
    if not location:
        raise ConfigError(f"say where the job runs: --zone Z or --region R; {NEEDS_HOURLY}")
    provider = (request.intensity_provider or "static").strip().lower()
    if provider != "static":
        if not request.zone:
            raise ConfigError(f"--intensity-provider {provider} needs --zone")
        return location, sources.live_forecast(request.zone, provider, start_s, end_s)

    if request.zone:  # an unknown name is an error with the closest known names
        static.zone_source(request.zone)
    else:
        static.cloud_region_source(location)
    raise ConfigError(f"only a yearly mean is known for {location}; {NEEDS_HOURLY}")


def parse_time_s(text: str, now_s: float, what: str) -> float:
    """An ISO 8601 time with ``Z`` or an offset, or ``+DURATION`` from now → Unix seconds."""
    now = datetime.fromtimestamp(now_s, tz=timezone.utc)
    return parse_instant(text, what, now=now).timestamp()


def _duration(request: GreenRequest) -> tuple[float, str]:
    """The job's duration and where it comes from (``--duration`` or the last run of ``--name``)."""
    if request.duration is not None:
        return parse_duration_s(request.duration, "--duration"), "--duration"
    if request.name:
        found = previous_duration(request.name, request.db_url)
        if found is not None:
            return found
        raise ConfigError(
            f"--duration is required: no completed run named {request.name!r} in the store"
        )
    raise ConfigError("--duration is required (or --name of a job that ran before)")


def previous_duration(name: str, db_url: str | None) -> tuple[float, str] | None:
    """The run time (pauses left out) of the newest completed run named ``name``."""
    store = open_store(db_url)
    try:
        for row in store.list_runs(limit=50, name=name):
            if row.get("status") == "completed" and row.get("duration_s"):
                schedule = store.get_run_record(row["id"]).schedule
                executed = schedule.executed if schedule is not None else None
                paused_s = executed.paused_s if executed is not None else None
                seconds = float(row["duration_s"]) - (paused_s or 0.0)
                return seconds, f"from the previous run {row['id']} named {name!r}"
    finally:
        store.close()
    return None


def _utc(time_s: float) -> datetime:
    return datetime.fromtimestamp(time_s, tz=timezone.utc)


def _iso(time_s: float) -> str:
    return _utc(time_s).isoformat().replace("+00:00", "Z")
