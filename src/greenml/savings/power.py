"""Candidates from runs of one workload at different GPU power limits or clock locks.

Runs are grouped by workload (the run's name, else its ``workload`` tag) and GPU
model; within a group, each setting (the power limit NVML reported in the run's
environment, the ``policy`` block's limit, or a ``gpu_clocks`` tag) is compared
with the highest-limit runs by :mod:`greenml.report.compare` — the rule the
savings report and the CI gate use: energy per unit of work, significance when the
change exceeds its combined uncertainty. A power limit and a clock lock on the
same GPU model are one decision (``gpu-power:MODEL``): the better one is kept.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from greenml.errors import ConfigError
from greenml.report.compare import change, group_estimate, run_figures, same_setup
from greenml.report.work import common_unit
from greenml.savings.candidate import Candidate
from greenml.savings.footprint import Footprint

MAX_SLOWDOWN = 0.10
"""A setting that makes the work more than 10 % slower is not proposed (time to result)."""


def workload_of(record: Mapping[str, Any]) -> str | None:
    return record.get("name") or (record.get("tags") or {}).get("workload")


def gpu_model(record: Mapping[str, Any]) -> str | None:
    gpus = ((record.get("environment") or {}).get("gpu") or {}).get("gpus") or []
    names = [g.get("name") for g in gpus if isinstance(g, dict) and g.get("name")]
    return str(names[0]) if names else None


def setting_of(record: Mapping[str, Any]) -> tuple[str, float] | None:
    """``("power_limit_w", 250.0)`` or ``("gpu_clocks_mhz", 1410.0)``; ``None`` if unknown."""
    tags = record.get("tags") or {}
    if tags.get("gpu_clocks"):
        try:
            return "gpu_clocks_mhz", float(tags["gpu_clocks"])
        except ValueError:
            return None
    policy = record.get("policy") or {}
    if isinstance(policy.get("power_limit_w"), (int, float)):
        return "power_limit_w", float(policy["power_limit_w"])
    gpus = ((record.get("environment") or {}).get("gpu") or {}).get("gpus") or []
    limits = {g.get("power_limit_w") for g in gpus if isinstance(g, dict)}
    if len(limits) == 1 and isinstance(next(iter(limits)), (int, float)):
        return "power_limit_w", float(next(iter(limits)))  # type: ignore[arg-type]
    return None


def from_power_settings(
    records: Sequence[Mapping[str, Any]], year: Footprint
) -> list[Candidate]:
    """One candidate per (workload, GPU model) whose lower setting saves significantly."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for r in records:
        work, model = workload_of(r), gpu_model(r)
        if r.get("status") == "completed" and work and model and setting_of(r):
            groups[(work, model)].append(r)
    total = sum(float((r.get("energy") or {}).get("total_j") or 0.0)
                for r in records if r.get("status") == "completed")  # fmt: skip
    out = []
    for (work, model), runs in groups.items():
        found = _best(work, model, runs, total, year)
        if found is not None:
            out.append(found)
    return out


def _best(
    work: str, model: str, runs: list[Mapping[str, Any]], total_j: float, year: Footprint
) -> Candidate | None:
    by_setting: dict[tuple[str, float], list[Mapping[str, Any]]] = defaultdict(list)
    for r in runs:
        found = setting_of(r)
        if found is not None:
            by_setting[found].append(r)
    limits = [s for s in by_setting if s[0] == "power_limit_w"]
    if len(by_setting) < 2 or not limits:
        return None
    default = max(limits, key=lambda s: s[1])
    base_runs = by_setting[default]
    best = None
    for setting, trial in by_setting.items():
        if setting == default:
            continue
        try:
            unit = common_unit({"baseline": base_runs, "candidate": trial}, None)
            b = group_estimate([run_figures(r, unit) for r in base_runs], "energy")
            c = group_estimate([run_figures(r, unit) for r in trial], "energy")
            if isinstance(b, str) or isinstance(c, str):
                continue
            moved = change(b, c, same_setup([*base_runs, *trial]))
        except ConfigError:
            continue
        slower = _mean_duration(trial) / max(_mean_duration(base_runs), 1e-9) - 1.0
        if moved.change_rel >= 0 or not moved.significant or slower > MAX_SLOWDOWN:
            continue
        if best is None or moved.change_rel < best[1].change_rel:
            best = (setting, moved, slower, trial)
    if best is None:
        return None
    (name, value), moved, slower, trial = best
    workload_j = sum(float((r.get("energy") or {}).get("total_j") or 0.0) for r in runs)
    share = -moved.change_rel * workload_j / total_j if total_j > 0 else 0.0
    energy = year.energy_j * share
    label = f"{value:g} W power limit" if name == "power_limit_w" else f"{value:g} MHz clock lock"
    return Candidate(
        key=f"gpu-power:{model}",
        title=f"{label} on {model} for {work!r}",
        base="energy", share=share, energy_j=energy, co2_g=energy * year.g_per_j,
        usd=None if year.usd_per_j is None else energy * year.usd_per_j,
        uncertainty_rel=moved.uncertainty_rel / max(-moved.change_rel, 1e-9),
        method=(f"measured: energy per unit of work {moved.change_rel * 100:+.1f} % "
                f"± {moved.uncertainty_rel * 100:.1f} % ({len(trial)} run(s) at {label} against "
                f"{len(base_runs)} at {default[1]:g} W, greenml.report.compare), × the "
                "workload's share of the project's energy × the yearly rate"),
        evidence_runs=tuple(str(r["id"]) for r in [*base_runs, *trial]),
        findings=(f"power-sweep:{work}",), effort="low",
        risk=f"time to result {slower * 100:+.1f} % (measured)", action="policy",
        settings={name: value, "gpu_model": model, "workload": work,
                  "trial_runs": [str(r["id"]) for r in trial],
                  "expected_saving_rel": -moved.change_rel},
    )  # fmt: skip


def _mean_duration(runs: list[Mapping[str, Any]]) -> float:
    return sum(float(r.get("duration_s") or 0.0) for r in runs) / max(len(runs), 1)
