"""A project of stored runs with planted waste, built through the store's own API.

- ``train`` on an A100 at the default 400 W limit (about 330 W drawn), 4 runs, and 3 runs
  at 250 W (about 245 W drawn, 5 % slower) that use about 22 % less energy per sample (a
  power limit that saves, within 10 % of the time);
- every ``train`` run starts at 06:00 UTC in US-CAL-CISO, the zone's dirty hours (a
  dirty-hour schedule: 17:00–22:00 UTC is about 37 % cleaner on its typical day);
- ``serve`` holds an A100 that is idle 80 % of its samples (60 W idle, 300 W busy: an idle GPU).

Every run's GPU energy is its samples' mean power × its duration, so the diagnosis (from
the samples) and the audit (from the record) see the same run.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from greenml.measure.measurement import Sample
from greenml.store.repository import Store

DAY0 = datetime(2026, 10, 5, 6, 0, tzinfo=timezone.utc)
ZONE = "US-CAL-CISO"
INTENSITY = 308.0  # CISO's typical 06:00–08:00 UTC, g/kWh


def energy_block(gpu_j: float, cpu_j: float, rel: float = 0.02) -> dict[str, Any]:
    def component(j: float, key: str, name: str) -> dict[str, Any]:
        device = {"energy_j": j, "method": "counter", "uncertainty_rel": rel, "name": name}
        return {"energy_j": j, "method": "counter", "uncertainty_rel": rel,
                "devices": {key: device}}  # fmt: skip

    total = gpu_j + cpu_j
    return {"total_j": total, "total_kwh": total / 3.6e6, "uncertainty_rel": rel,
            "components": {"gpu": component(gpu_j, "gpu0", "NVIDIA A100"),
                           "cpu": component(cpu_j, "cpu0", "CPU")}, "notes": []}  # fmt: skip


def add_run(
    store: Store, *, name: str, start: datetime, duration_s: float, power_w: list[float],
    limit_w: float, samples: int, utilization: list[float], work: float | None = None,
    intensity: float = INTENSITY, policy: dict[str, Any] | None = None,
    extra_tags: dict[str, str] | None = None,
) -> str:  # fmt: skip
    tags = {"project": "vision", **(extra_tags or {})}
    if work is not None:
        tags["samples"] = f"{work:g}"
    t0 = start.timestamp()
    run_id = store.create_run(name=name, command=["python", f"{name}.py"], tags=tags,
                              started_at=t0, pid=1, hostname="node1")  # fmt: skip
    store.add_samples(run_id, [
        Sample("gpu0", "gpu", t0 + k * duration_s / (samples - 1), power_w[k % len(power_w)],
               {"utilization": utilization[k % len(utilization)]})
        for k in range(samples)
    ])  # fmt: skip
    gpu_j = sum(power_w[k % len(power_w)] for k in range(samples)) / samples * duration_s
    store.set_environment(run_id, {"gpu": {"gpus": [
        {"index": 0, "name": "NVIDIA A100", "power_limit_w": limit_w}]}})  # fmt: skip
    energy = energy_block(gpu_j, 0.1 * gpu_j)
    kwh = energy["total_j"] / 3.6e6
    extra: dict[str, Any] = {
        "carbon": {"status": "ok", "kg": kwh * intensity / 1000, "intensity_g_per_kwh": intensity,
                   "uncertainty_rel": 0.05, "location": ZONE, "pue": 1.0},
        "cost": {"status": "ok", "usd": kwh * 0.2, "uncertainty_rel": 0.02},
    }  # fmt: skip
    if policy is not None:
        extra["policy"] = policy
    store.update_extra(run_id, extra)
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=duration_s,
                     energy=energy, ended_at=t0 + duration_s)  # fmt: skip
    return run_id


BUSY = [0.95, 0.9, 0.97, 0.92]
IDLE = [0.02, 0.03, 0.01, 0.02, 0.9]  # idle 4 samples in 5
IDLE_W = [60.0, 60.0, 60.0, 60.0, 300.0]


def plant(store: Store) -> dict[str, list[str]]:
    """The planted project; its run ids by group."""
    ids: dict[str, list[str]] = {"default": [], "capped": [], "serve": []}
    for day, (watts, ci) in enumerate([(330.0, 306.0), (336.0, 311.0), (327.0, 304.0),
                                       (333.0, 309.0)]):  # fmt: skip
        ids["default"].append(add_run(store, name="train", start=DAY0 + timedelta(days=day),
                                      duration_s=7200, power_w=[watts], limit_w=400, samples=40,
                                      utilization=BUSY, work=1e6, intensity=ci))  # fmt: skip
    for day, (watts, ci) in enumerate([(245.0, 312.0), (247.0, 305.0), (243.0, 308.0)]):
        ids["capped"].append(add_run(store, name="train", start=DAY0 + timedelta(days=4 + day),
                                     duration_s=7560, power_w=[watts], limit_w=250, samples=40,
                                     utilization=BUSY, work=1e6, intensity=ci))  # fmt: skip
    for day in range(3):
        ids["serve"].append(add_run(store, name="serve",
                                    start=DAY0 + timedelta(days=day, hours=12),
                                    duration_s=36000, power_w=IDLE_W, limit_w=400, samples=50,
                                    utilization=IDLE, intensity=250.0))  # fmt: skip
    return ids
