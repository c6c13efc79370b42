"""Input-bound training: the accelerator waits while the host prepares data.

Two signals, each used when the data has it:

- samples: intervals where a GPU's activity is below ``idle_below`` while the
  host CPU utilization (mean of the CPU packages, interpolated at the GPU's
  sample times) is at least ``cpu_busy_above``; the energy at stake is the GPU
  energy of those intervals;
- windows the program marks (names starting ``data`` and ``compute``): a data
  share of at least ``DATA_SHARE`` of their time; at stake is the energy of the
  ``data*`` windows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from greenml.diagnose.findings import Finding, severity_of
from greenml.diagnose.timeline import Timeline
from greenml.quantities import energy

CPU_BUSY_ABOVE = 0.60
MIN_TIME_SHARE = 0.05
DATA_SHARE = 0.20
ADVICE = (
    "feed the accelerator faster: more DataLoader workers, pinned memory and prefetching, "
    "pre-processed or cached data, or GPU-side decoding (DALI)"
)


def stall_finding(
    timeline: Timeline, *, idle_below: float, cpu_busy_above: float = CPU_BUSY_ABOVE
) -> Finding | None:
    """GPU idle while the CPU is busy, summed over GPUs; ``None`` if not seen."""
    cpus = [c for c in timeline.of("cpu") if not np.isnan(c.utilization).all()]
    gpus = timeline.of("gpu")
    if not cpus or not gpus:
        return None
    wait_s = total_s = wait_j = total_j = 0.0
    for gpu in gpus:
        found = gpu.activity()
        if found is None:
            continue
        act = found[0][:-1]
        t = gpu.time_s[:-1]
        cpu = np.mean([_interp(t, c.time_s, c.utilization) for c in cpus], axis=0)
        waiting = (act < idle_below) & (cpu >= cpu_busy_above)
        dt, energy = gpu.interval_s(), gpu.interval_energy_j()
        wait_s += float(dt[waiting].sum())
        total_s += float(dt.sum())
        wait_j += float(energy[waiting].sum())
        total_j += float(energy.sum())
    if total_s <= 0 or wait_s / total_s < MIN_TIME_SHARE:
        return None
    share = wait_s / total_s
    return Finding(
        kind="input-bound",
        severity=severity_of(wait_j / total_j if total_j > 0 else 0.0),
        title=f"GPUs wait for input {share:.0%} of the time",
        evidence=(
            f"GPU activity below {idle_below:.0%} while host CPU utilization was at least "
            f"{cpu_busy_above:.0%} for {share:.0%} of GPU time ({wait_s:.0f} GPU-seconds); "
            "the overlap in time points at data loading (also counted in the idle findings)"
        ),
        recommendation=ADVICE,
        energy_at_stake_j=wait_j,
        figures={"wait_s": wait_s, "time_share": share, "cpu_busy_above": cpu_busy_above},
    )


def window_finding(windows: list[dict[str, Any]]) -> Finding | None:
    """Long ``data*`` windows against short ``compute*`` windows; ``None`` if not seen."""
    data = [w for w in windows if str(w["name"]).lower().startswith("data")]
    compute = [w for w in windows if str(w["name"]).lower().startswith("compute")]
    if not data or not compute:
        return None
    data_s = sum(float(w["duration_s"]) for w in data)
    compute_s = sum(float(w["duration_s"]) for w in compute)
    data_j = sum(float(w["energy_j"]) for w in data)
    compute_j = sum(float(w["energy_j"]) for w in compute)
    share = data_s / (data_s + compute_s) if data_s + compute_s > 0 else 0.0
    if share < DATA_SHARE:
        return None
    return Finding(
        kind="input-bound",
        severity=severity_of(data_j / (data_j + compute_j) if data_j + compute_j > 0 else 0.0),
        title=f"data loading takes {share:.0%} of the step time",
        evidence=(
            f"{len(data)} data windows took {data_s:.1f} s against {compute_s:.1f} s in "
            f"{len(compute)} compute windows; {energy(data_j)} was spent waiting for data"
        ),
        recommendation=ADVICE,
        energy_at_stake_j=data_j,
        figures={"data_s": data_s, "compute_s": compute_s, "data_share": share},
    )


def _interp(t: Any, times: Any, values: Any) -> Any:
    known = ~np.isnan(values)
    return np.interp(t, times[known], values[known])
