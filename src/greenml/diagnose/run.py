"""``diagnose_run``: every finding for one stored run."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from greenml.diagnose import input_bound, mfu, practice, rightsizing, utilization
from greenml.diagnose.findings import Diagnosis, Finding, severity_of
from greenml.diagnose.scaling import analyze_scaling, comm_compute_split, scaling_point
from greenml.diagnose.stragglers import by_rank, find_stragglers
from greenml.diagnose.timeline import DeviceSeries, load_timeline
from greenml.errors import ConfigError
from greenml.hardware.gpu import gpu_spec

if TYPE_CHECKING:
    from greenml.store.repository import Store

NO_GPU_NOTE = "no GPU in this run: analysed the CPU (utilization) instead"


def diagnose_run(
    store: Store,
    run_id: str,
    *,
    idle_below: float = 0.15,
    underused_below: float = 0.50,
    runs_per_year: float | None = None,
    candidates: list[str] | None = None,
) -> Diagnosis:
    """Find waste in a stored run: idle and under-used devices, input stalls,
    a better-sized GPU, and practice issues (location, precision, duty cycle).

    Args:
        store: The run store.
        run_id: A run id or unique prefix.
        idle_below: Activity under which a device counts as idle (0–1).
        underused_below: Activity under which it counts as under-used (0–1).
        runs_per_year: How often the job runs, for per-year figures.
        candidates: Grid zones or cloud regions the job could run in instead.

    Raises:
        ConfigError: Bad thresholds, an unknown candidate, or a run without samples.
        RunNotFound: No run matches.
    """
    if not 0 <= idle_below <= underused_below <= 1:
        raise ConfigError(
            f"thresholds must satisfy 0 ≤ idle ({idle_below:.0%}) ≤ under-used "
            f"({underused_below:.0%}) ≤ 100%"
        )
    if runs_per_year is not None and runs_per_year <= 0:
        raise ConfigError(f"runs per year must be positive, not {runs_per_year}")
    record = store.get_record(run_id)
    run_id = record["id"]
    timeline = load_timeline(store, run_id)
    gpus = timeline.of("gpu")
    analysed = "gpu" if gpus else "cpu"
    devices = gpus or timeline.of("cpu")
    notes = [] if gpus else [NO_GPU_NOTE]
    stored = ((record.get("energy") or {}).get("components") or {}).get(analysed) or {}
    seen = {d.device for d in devices}
    for key in stored.get("devices") or {}:
        if key not in seen:  # fewer than two samples: not even one interval to classify
            needed = utilization.MIN_INTERVALS + 1
            notes.append(
                f"{key}: idle/under-used findings withheld: fewer than 2 samples, at least "
                f"{needed} needed (sample faster with --sample-hz, or run longer)"
            )
    findings: list[Finding] = []
    for device in devices:
        findings += utilization.device_findings(
            device, idle_below=idle_below, underused_below=underused_below
        )
        found = device.activity()
        if withheld := utilization.support_note(device):
            notes.append(withheld)
        elif found is not None and (note := utilization.gauge_note(device, found[1])):
            notes.append(note)
    if gpus:
        findings += _gpu_findings(store, record, timeline, gpus, idle_below, notes)
    findings += _maybe(practice.location_finding(record, list(candidates or [])))
    findings += _maybe(mfu.mfu_finding(record))
    stored_windows = store.windows(run_id)
    findings += _maybe(straggler_finding(stored_windows))
    findings += _maybe(communication_finding(stored_windows))
    findings += _maybe(scaling_finding(store, record))
    if candidates and (record.get("carbon") or {}).get("status") != "ok":
        notes.append("no carbon figure for this run (no location): candidates not compared")
    price = _usd_per_kwh(record)
    if price is None:
        notes.append("no electricity price in the run's cost block: $ at stake unknown")
    findings = [f.priced(price).yearly(runs_per_year) for f in findings]
    findings.sort(key=lambda f: (-f.energy_at_stake_j, -(f.co2_g_at_stake or 0.0)))
    return Diagnosis(
        run_id=run_id,
        analysed=analysed,
        duration_s=float(record.get("duration_s") or (timeline.end_s - timeline.start_s)),
        energy_j=stored_energy_j(record, analysed, devices),
        energy_method=str(_stored_block(record, analysed).get("method") or "power-integrated"),
        energy_uncertainty_rel=_stored_block(record, analysed).get("uncertainty_rel"),
        usd_per_kwh=price,
        runs_per_year=runs_per_year,
        findings=findings,
        notes=list(dict.fromkeys(notes)),
    )


def _gpu_findings(
    store: Store,
    record: dict[str, Any],
    timeline: Any,
    gpus: list[DeviceSeries],
    idle_below: float,
    notes: list[str],
) -> list[Finding]:
    out = _maybe(input_bound.stall_finding(timeline, idle_below=idle_below))
    out += _maybe(input_bound.window_finding(store.windows(record["id"])))
    energy_j = sum(g.energy_j() for g in gpus)
    activity = _mean_activity(gpus)
    name = rightsizing.gpu_name(record, gpus[0].device)
    if name is None:
        notes.append("GPU model unknown (no name in the record): rightsizing skipped")
    peaks = [p for g in gpus if (p := g.peak_memory_bytes()) is not None]
    if name is not None and activity is not None and peaks:
        try:
            precision = rightsizing.precision_of(record, gpu_spec(name))
        except ConfigError:
            notes.append(f"GPU {name!r} is not in the hardware table: rightsizing skipped")
        else:
            out += _maybe(
                rightsizing.rightsizing_finding(
                    name=name,
                    n_gpus=len(gpus),
                    peak_memory_bytes=max(peaks),
                    mean_activity=activity,
                    energy_j=energy_j,
                    duration_s=timeline.end_s - timeline.start_s,
                    precision=precision,
                    usd_per_kwh=_usd_per_kwh(record),
                )
            )
    out += _maybe(practice.precision_finding(record, name, energy_j, activity or 0.0))
    if record.get("name"):
        runs = store.list_runs(limit=0, name=record["name"])
        idle_w = sum(float(np.nanmin(g.power_w)) for g in gpus if not np.isnan(g.power_w).all())
        out += _maybe(practice.duty_cycle_finding(record, runs, idle_w, _usd_per_kwh(record)))
    return out


def stored_energy_j(record: dict[str, Any], component: str, devices: list[DeviceSeries]) -> float:
    """The analysed component's energy as stored with the run (the figure every command
    shows); integrated from the samples only for a run stored without it."""
    stored = _stored_block(record, component).get("energy_j")
    if isinstance(stored, (int, float)):
        return float(stored)
    return sum(d.energy_j() for d in devices)


def _stored_block(record: dict[str, Any], component: str) -> dict[str, Any]:
    block = ((record.get("energy") or {}).get("components") or {}).get(component) or {}
    return block if isinstance(block, dict) else {}


def _mean_activity(devices: list[DeviceSeries]) -> float | None:
    """Time-weighted mean activity over devices, ``None`` without a gauge."""
    total = weight = 0.0
    for d in devices:
        found = d.activity()
        if found is None:
            continue
        act, dt = found[0][:-1], d.interval_s()
        known = ~np.isnan(act)
        total += float((act[known] * dt[known]).sum())
        weight += float(dt[known].sum())
    return total / weight if weight > 0 else None


def _usd_per_kwh(record: dict[str, Any]) -> float | None:
    """Dollars per IT kWh from the cost block (PUE included), ``None`` without one."""
    cost = record.get("cost") or {}
    if cost.get("status") != "ok" or not cost.get("it_energy_kwh"):
        return None
    return float(cost["usd"]) / float(cost["it_energy_kwh"])


def _maybe(finding: Finding | None) -> list[Finding]:
    return [] if finding is None else [finding]


def straggler_finding(windows: list[dict[str, Any]]) -> Finding | None:
    """Ranks waiting for the slowest in synchronous steps (``step/rankN`` windows)."""
    if len(by_rank(windows, "step")) < 2:
        return None
    report = find_stragglers(windows, "step")
    if report.steps == 0 or report.wait_energy_j <= 0:
        return None
    return Finding(
        kind="straggler",
        severity=severity_of(report.wait_fraction),
        title=f"rank {report.critical_rank} sets the pace of {report.steps} steps",
        evidence=report.text,
        recommendation=(
            "balance the work across ranks, or lower the power limit of the ranks that wait "
            "so they finish just in time (greenml optimize, straggler-aware power)"
        ),
        energy_at_stake_j=report.wait_energy_j,
        figures={"wait_fraction": report.wait_fraction, "steps": report.steps},
    )


def communication_finding(windows: list[dict[str, Any]]) -> Finding | None:
    """Time and energy in ``comm`` windows against ``compute`` windows, when marked."""
    if not any(str(w.get("name", "")).startswith("comm") for w in windows):
        return None
    split = comm_compute_split(windows)
    if split.comm_s <= 0:
        return None
    return Finding(
        kind="communication",
        severity=severity_of(split.comm_fraction),
        title=f"{split.comm_fraction:.0%} of step time is communication",
        evidence=split.text,
        recommendation=(
            "overlap communication with computation (gradient bucketing, accumulation), "
            "synchronize less often, or use fewer, larger devices"
        ),
        energy_at_stake_j=split.comm_energy_j,
        figures={"comm_fraction": split.comm_fraction, "comm_s": split.comm_s},
    )


def scaling_finding(store: Store, record: dict[str, Any]) -> Finding | None:
    """Parallel efficiency across stored runs of the same name at different device counts."""
    name = record.get("name")
    if not name:
        return None
    ids = [r["id"] for r in store.list_runs(limit=1000, name=name) if r["status"] == "completed"]
    points = [scaling_point(store.get_record(i)) for i in ids]
    if len({p.devices for p in points}) < 2:
        return None
    report = analyze_scaling(points)
    worst = min(report.rows, key=lambda row: row.efficiency)
    mine = next((row for row in report.rows if row.devices == scaling_point(record).devices), None)
    best_j = min(row.energy_per_work_j for row in report.rows)
    at_stake = 0.0
    if mine is not None and mine.energy_per_work_j > best_j:
        at_stake = (mine.energy_per_work_j - best_j) * scaling_point(record).work
    return Finding(
        kind="scaling",
        severity="medium" if worst.efficiency < 0.7 else "info",
        title=f"parallel efficiency {worst.efficiency:.0%} at {worst.devices} devices",
        evidence=report.text,
        recommendation=(
            "run at the device count with the lowest energy per unit of work "
            "unless the deadline needs more"
        ),
        energy_at_stake_j=at_stake,
        figures={"runs": len(points), "worst_efficiency": worst.efficiency},
    )
