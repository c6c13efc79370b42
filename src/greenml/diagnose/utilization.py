"""Idle and under-used devices: energy spent while the device did little.

The gauge is ``sm_activity`` (DCGM's share of time SMs had work) where the GPU
reports it; NVML ``utilization`` counts a period as busy when any kernel ran,
so one small kernel reads as 100 % and the finding is then a lower bound.
"""

from __future__ import annotations

import numpy as np

from greenml.diagnose.findings import Finding, severity_of
from greenml.diagnose.timeline import DeviceSeries

MIN_TIME_SHARE = 0.05
"""A device must spend at least this share of its time in a state to be reported."""

MIN_INTERVALS = 5
"""Sampling intervals with a known gauge a device needs before it is classified: with
fewer, one reading stands for a large share of the run and a short burst of work can
read as "idle 100 %"."""

OVERSTATES = (
    "only NVML utilization is available: it counts a period busy when one kernel ran, "
    "so it overstates use and this figure is a lower bound"
)


def gauge_note(device: DeviceSeries, gauge: str) -> str:
    """Why the gauge matters, or ``""``."""
    if device.component == "gpu" and gauge == "utilization":
        return f"{device.device}: {OVERSTATES}"
    return ""


def support_note(device: DeviceSeries) -> str:
    """Why a device's idle/under-used findings are withheld, or ``""`` when they stand."""
    found = device.activity()
    if found is None:
        return f"{device.device}: no activity gauge sampled; not classified"
    intervals = int((~np.isnan(found[0][:-1])).sum())
    if intervals < MIN_INTERVALS:
        return (
            f"{device.device}: idle/under-used findings withheld: {intervals} sampling "
            f"interval(s) of {found[1]}, at least {MIN_INTERVALS} needed (sample faster "
            "with --sample-hz, or run longer)"
        )
    return ""


def device_findings(
    device: DeviceSeries, *, idle_below: float, underused_below: float
) -> list[Finding]:
    """``idle`` and ``underused`` findings for one device (none without an activity gauge,
    none when it has too few samples: see :func:`support_note`)."""
    found = device.activity()
    if found is None or support_note(device):
        return []
    activity, gauge = found
    act = activity[:-1]
    dt = device.interval_s()
    energy = device.interval_energy_j()
    total_s, total_j = float(dt.sum()), float(energy.sum())
    if total_s <= 0:
        return []
    known = ~np.isnan(act)
    idle = known & (act < idle_below)
    under = known & (act >= idle_below) & (act < underused_below)
    out = []
    for kind, mask, label in (
        ("idle", idle, f"below {idle_below:.0%}"),
        ("underused", under, f"between {idle_below:.0%} and {underused_below:.0%}"),
    ):
        time_s, energy_j = float(dt[mask].sum()), float(energy[mask].sum())
        if time_s / total_s < MIN_TIME_SHARE:
            continue
        mean_act = float(np.average(act[mask], weights=dt[mask])) if time_s > 0 else 0.0
        share_j = energy_j / total_j if total_j > 0 else 0.0
        note = gauge_note(device, gauge)
        evidence = (
            f"{device.device} spent {time_s / total_s:.0%} of its time ({time_s:.0f} s) with "
            f"{gauge} {label} (mean {mean_act:.0%}), drawing {share_j:.0%} of its energy "
            f"(from {int(mask.sum())} of {int(known.sum())} sampling intervals)"
        )
        out.append(
            Finding(
                kind=kind,
                severity=severity_of(share_j),
                title=f"{device.device} {'idle' if kind == 'idle' else 'under-used'} "
                f"{time_s / total_s:.0%} of the time",
                evidence=evidence + (f"; {note}" if note else ""),
                recommendation=_advice(kind, device.component),
                energy_at_stake_j=energy_j,
                figures={
                    "time_s": time_s,
                    "time_share": time_s / total_s,
                    "energy_share": share_j,
                    "mean_activity": mean_act,
                    "gauge": gauge,
                    "intervals": int(mask.sum()),
                    "intervals_known": int(known.sum()),
                    "threshold": idle_below if kind == "idle" else underused_below,
                },
                device=device.device,
            )
        )
    return out


def _advice(kind: str, component: str) -> str:
    if kind == "idle":
        return (
            f"release the {component.upper()} while it waits (end the job, or share it), "
            "or overlap the idle phases (evaluation, checkpointing) with compute"
        )
    share = " (MIG, MPS)" if component == "gpu" else ""
    return (
        "raise the work per step (larger batch, fused kernels, fewer syncs), or move the "
        f"job to a smaller {component.upper()} or share this one{share}"
    )
