"""Stored runs with hand-made samples for diagnose tests."""

from __future__ import annotations

from typing import Any

from greenml.measure.measurement import Sample
from greenml.store.repository import Store

T0 = 1_700_000_000.0


def gpu_energy_block(names: dict[str, str]) -> dict[str, Any]:
    devices = {
        k: {"energy_j": 1.0, "method": "counter", "uncertainty_rel": 0.05, "name": n}
        for k, n in names.items()
    }
    return {"total_j": 1.0, "components": {"gpu": {"energy_j": 1.0, "devices": devices}}}


def make_run(
    store: Store,
    samples: list[Sample],
    *,
    gpu_names: dict[str, str] | None = None,
    tags: dict[str, str] | None = None,
    name: str | None = None,
    started_at: float = T0,
    usd_per_kwh: float | None = None,
    carbon_g_per_kwh: float | None = None,
) -> str:
    """A finished run with these samples; a cost / carbon block when given."""
    run_id = store.create_run(
        name=name, command=["python", "train.py"], tags=dict(tags or {}),
        started_at=started_at, pid=1, hostname="h",
    )  # fmt: skip
    store.add_samples(run_id, samples)
    duration = max((s.time_s for s in samples), default=started_at) - started_at
    store.finish_run(
        run_id, status="completed", exit_code=0, duration_s=duration,
        energy=gpu_energy_block(gpu_names or {}), ended_at=started_at + duration,
    )  # fmt: skip
    extra: dict[str, Any] = {}
    if usd_per_kwh is not None:
        extra["cost"] = {"status": "ok", "usd": usd_per_kwh, "it_energy_kwh": 1.0}
    if carbon_g_per_kwh is not None:
        extra["carbon"] = {
            "status": "ok", "intensity_g_per_kwh": carbon_g_per_kwh,
            "facility_energy_kwh": 2.0, "source": "test",
        }  # fmt: skip
    if extra:
        store.update_extra(run_id, extra)
    return run_id


def phases(
    device: str,
    spec: list[tuple[int, float, float]],
    *,
    component: str = "gpu",
    gauge: str = "sm_activity",
    memory: float | None = None,
    start: float = T0,
) -> list[Sample]:
    """1 Hz samples: for each (seconds, watts, activity) phase, that many samples."""
    out: list[Sample] = []
    t = start
    for seconds, watts, activity in spec:
        for _ in range(seconds):
            metrics = {gauge: activity}
            if memory is not None:
                metrics["memory_used_bytes"] = memory
            out.append(Sample(device, component, t, watts, metrics))
            t += 1.0
    return out
