"""Node runs of a job written straight into a store, as ``greenml run`` would leave them."""

from __future__ import annotations

from typing import Any

from greenml.store.repository import Store

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def node_run(
    store: Store,
    job: dict[str, Any],
    *,
    gpu_j: list[float],
    uncertainty_rel: float = 0.05,
    start_s: float = 0.0,
    duration_s: float = 100.0,
    carbon_kg: float | None = None,
    location: str | None = None,
    cost_usd: float | None = None,
    progress_total: float | None = None,
    name: str | None = None,
) -> str:
    """One finished run of ``job`` (a ``job`` block) with GPUs that used ``gpu_j`` joules."""
    run_id = store.create_run(name=name, command=["python", "train.py"], tags={},
                              started_at=T0 + start_s, pid=1, hostname=job.get("node"))  # fmt: skip
    devices = {
        f"gpu{i}": {"energy_j": e, "method": "counter", "uncertainty_rel": uncertainty_rel,
                    "name": "NVIDIA H100 80GB HBM3"}
        for i, e in enumerate(gpu_j)
    }  # fmt: skip
    total = sum(gpu_j)
    energy = {"total_j": total, "total_kwh": total / 3.6e6, "uncertainty_rel": uncertainty_rel,
              "components": {"gpu": {"energy_j": total, "method": "counter",
                                     "uncertainty_rel": uncertainty_rel, "devices": devices}},
              "notes": []}  # fmt: skip
    extra: dict[str, Any] = {"job": {"source": "option", **job}}
    if carbon_kg is not None:
        extra["carbon"] = {"status": "ok", "kg": carbon_kg, "location": location,
                           "source": "static table"}  # fmt: skip
    if cost_usd is not None:
        extra["cost"] = {"status": "ok", "usd": cost_usd}
    if progress_total is not None:
        extra["progress"] = {"step": progress_total, "total": progress_total, "reports": 1,
                             "rank": 0, "projection": None, "windows_from_events": 0,
                             "windows_dropped": 0, "bad_event_lines": 0}  # fmt: skip
    store.update_extra(run_id, extra)
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=duration_s,
                     energy=energy, ended_at=T0 + start_s + duration_s)  # fmt: skip
    return run_id
