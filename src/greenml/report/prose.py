"""Phrases and tables that several report kinds use to describe a run set."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

from greenml.__version__ import __version__
from greenml.report import records as rec
from greenml.report import sigfig as fmt
from greenml.report.model import Table

if TYPE_CHECKING:
    from greenml.report.runset import RunSet

METHOD_WORDS = {
    "counter": "read from hardware energy counters",
    "power-integrated": "integrated from sampled power",
    "estimated": "estimated by a model (TDP × utilization, W per GB)",
}

UNCERTAINTY_NOTE = (
    "Uncertainties: within a run, components are combined in quadrature and devices of "
    "one component add linearly; across runs, absolute uncertainties add linearly (same "
    "sensors and methods, so errors are taken as correlated: a conservative bound). "
    "Carbon adds the intensity's uncertainty in quadrature per run; the PUE is taken as exact."
)


def tool() -> str:
    """``greenml 0.1.0``."""
    return f"greenml {__version__}"


def hardware(runs: RunSet) -> str:
    """``A100 SXM4 80GB (up to 4 per run), host CPU AMD EPYC 7763`` or ``CPU only (…)``."""
    gpus = ", ".join(f"{d.name} (up to {d.max_count} per run)" for d in runs.devices.values())
    cpus = "; ".join(runs.cpus)
    if gpus and cpus:
        return f"{gpus}, host CPU {cpus}"
    if gpus:
        return gpus
    return f"CPU only ({cpus})" if cpus else "no device recorded"


def device_hours(runs: RunSet) -> str:
    """``12 A100 SXM4 80GB device-hours`` (GPUs) or ``none`` (CPU only)."""
    parts = [f"{fmt.sig(d.hours, 2)} {d.name} device-hours" for d in runs.devices.values()]
    return ", ".join(parts) if parts else "none (no GPU measured)"


def methods(runs: RunSet) -> str:
    """``93 % read from hardware energy counters, 7 % estimated by a model``."""
    shares = sorted(runs.method_shares().items(), key=lambda kv: -kv[1])
    parts = [f"{fmt.sig(share * 100, 2)} % {METHOD_WORDS.get(m, m)}" for m, share in shares]
    return ", ".join(parts) if parts else "nothing measured"


def measured_or_estimated(runs: RunSet) -> str:
    """``measured``, ``estimated`` or ``partly measured, partly estimated``."""
    shares = runs.method_shares()
    estimated = shares.get("estimated", 0.0)
    if not shares:
        return "unknown"
    if estimated == 0:
        return "measured"
    if estimated >= 0.999:
        return "estimated"
    return "partly measured, partly estimated"


def pue(runs: RunSet) -> str:
    """``1.1 (given by the user)``, a range, and the runs without one."""
    given = [p for p in runs.pues if p["source"] != rec.NO_PUE]
    parts = [f"{fmt.sig(p['pue'], 3)} ({p['source']})" for p in given]
    missing = sum(len(p["runs"]) for p in runs.pues if p["source"] == rec.NO_PUE)
    if missing:
        parts.append(f"none for {missing} run{'s' if missing > 1 else ''} (no facility overhead)")
    return "; ".join(parts) if parts else "none"


def intensity(runs: RunSet) -> str:
    """Effective g/kWh and its sources, ``unknown`` when no run has carbon."""
    value = runs.intensity_g_per_kwh()
    if value is None:
        return "unknown"
    sources = "; ".join(_source(e) for e in runs.intensities)
    return f"{fmt.sig(value, 3)} g CO2eq/kWh — {sources}"


def _source(entry: dict[str, object]) -> str:
    text = str(entry.get("source") or "unknown source")
    kind, scope = entry.get("kind"), entry.get("scope")
    if kind and str(kind) not in text:
        text += f" ({kind}, {scope or 'scope unknown'})"
    return text


def missing_carbon(runs: RunSet) -> str:
    """Which runs have no carbon, and why (one sentence)."""
    items = [f"{m.run_id} ({m.status}: {m.reason})" for m in runs.carbon.missing]
    return "Carbon is unknown for " + "; ".join(items) + "."


def statuses(runs: RunSet) -> dict[str, int]:
    """How many runs ended in each status (``completed``, ``failed``, ``incomplete`` …)."""
    out: dict[str, int] = {}
    for record in runs.records:
        status = str(record.get("status", "unknown"))
        out[status] = out.get(status, 0) + 1
    return out


def statuses_text(runs: RunSet) -> str:
    """``2 completed, 1 failed``."""
    return ", ".join(f"{n} {status}" for status, n in statuses(runs).items())


def utc(seconds: float | None) -> str:
    """Unix seconds as ``2024-05-01 12:00 UTC``."""
    if seconds is None:
        return "unknown"
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def runs_table(runs: RunSet) -> Table:
    """One row per run: name, status, start, duration, energy, carbon, tags."""
    rows = []
    for r in runs.records:
        it_j, it_u = rec.it_energy(r)
        carbon = rec.carbon(r)
        seconds = rec.duration_s(r)
        rows.append(
            [
                r["id"],
                r.get("name") or "",
                str(r.get("status", "")),
                utc(rec.timestamp(r.get("started_at"))),
                fmt.duration(seconds) if seconds is not None else "unknown",
                f"{fmt.energy(it_j)} {fmt.percent(it_u / it_j if it_j else None)}"
                if rec.energy_known(r)
                else "unknown",
                carbon.status if isinstance(carbon, rec.Missing) else fmt.co2(carbon[0]),
                ", ".join(f"{k}={v}" for k, v in (r.get("tags") or {}).items()),
            ]
        )
    columns = ["run", "name", "status", "started", "duration", "IT energy", "CO2eq", "tags"]
    return Table(columns=columns, rows=rows, title="Runs included")
