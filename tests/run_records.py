"""Run records built by hand for report and energy-gate tests (the shape the store returns)."""

from __future__ import annotations

import itertools
from typing import Any

_ids = itertools.count(1)
J_PER_KWH = 3.6e6


def record(
    energy_j: float,
    *,
    rel: float = 0.05,
    tags: dict[str, str] | None = None,
    gpu_j: float | None = None,
    ci_g_per_kwh: float | None = 400.0,
    carbon_rel: float = 0.10,
    usd_per_kwh: float | None = 0.20,
    status: str = "completed",
    run_id: str | None = None,
) -> dict[str, Any]:
    """A completed run record with energy, and carbon and cost blocks unless turned off.

    Args:
        energy_j: Total energy (J).
        rel: Relative uncertainty of the energy (and of the cost).
        tags: Run tags (work units).
        gpu_j: GPU component energy; ``None`` for a CPU-only run.
        ci_g_per_kwh: Intensity for the carbon block; ``None`` for no carbon block.
        carbon_rel: Relative uncertainty of the carbon.
        usd_per_kwh: Price for the cost block; ``None`` for no cost block.
        status: The run's status.
        run_id: Its id (default: a fresh 12-hex id).
    """
    run_id = run_id or f"{next(_ids):012x}"
    components: dict[str, Any] = {}
    if gpu_j is not None:
        components["gpu"] = _component(gpu_j, rel, "gpu0", "NVIDIA A100")
    components["cpu"] = _component(energy_j - (gpu_j or 0.0), rel, "cpu0", "CPU")
    out: dict[str, Any] = {
        "id": run_id,
        "name": None,
        "command": ["python", "bench.py"],
        "tags": dict(tags or {}),
        "started_at": "2026-01-01T00:00:00+00:00",
        "ended_at": "2026-01-01T00:01:00+00:00",
        "duration_s": 60.0,
        "exit_code": 0,
        "status": status,
        "energy": {
            "total_j": energy_j,
            "total_kwh": energy_j / J_PER_KWH,
            "uncertainty_rel": rel,
            "components": components,
            "notes": [],
        },
        "environment": {"gpu": {"gpus": [{"name": "NVIDIA A100"}]} if gpu_j is not None else {}},
        "windows": [],
    }
    kwh = energy_j / J_PER_KWH
    if ci_g_per_kwh is not None:
        out["carbon"] = {
            "status": "ok",
            "kg": kwh * ci_g_per_kwh / 1000,
            "intensity_g_per_kwh": ci_g_per_kwh,
            "uncertainty_rel": carbon_rel,
        }
    if usd_per_kwh is not None:
        out["cost"] = {"status": "ok", "usd": kwh * usd_per_kwh, "uncertainty_rel": rel}
    return out


def _component(joules: float, rel: float, key: str, name: str) -> dict[str, Any]:
    device = {"energy_j": joules, "method": "counter", "uncertainty_rel": rel, "name": name}
    return {
        "energy_j": joules,
        "method": "counter",
        "uncertainty_rel": rel,
        "devices": {key: device},
    }
