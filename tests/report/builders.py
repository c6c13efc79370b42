"""Runs in a real store, built the way ``greenml run`` stores them (energy, carbon, cost)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from greenml.accounting.carbon import Carbon
from greenml.accounting.cost import Cost
from greenml.accounting.run_accounting import unavailable, unknown_carbon
from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement, Sample
from greenml.store import open_store
from greenml.store.repository import Store

T0 = 1_714_564_800.0  # 2024-05-01 12:00:00 UTC
KWH = 3.6e6
A100 = "NVIDIA A100-SXM4-80GB"
H100 = "NVIDIA H100 80GB HBM3"
XEON = "Intel(R) Xeon(R) Platinum 8480+"


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite store (reports only read it; both backends are tested in store/)."""
    return f"sqlite:///{tmp_path / 'greenml.db'}"


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    with open_store(db_url) as s:
        yield s


Device = tuple[str, str, str, float, str, float]
"""(component, key, name, joules, method, uncertainty_rel)."""


def a100_devices(gpus: int = 2, gpu_kwh: float = 0.9, cpu_kwh: float = 0.2) -> list[Device]:
    """``gpus`` A100s read from NVML counters (±5 %) and an estimated CPU (±30 %)."""
    devices: list[Device] = [
        ("gpu", f"gpu{i}", A100, gpu_kwh * KWH, "counter", 0.05) for i in range(gpus)
    ]
    devices.append(("cpu", "cpu0", f"{XEON} (model, TDP 350 W)", cpu_kwh * KWH, "estimated", 0.3))
    return devices


def measurement(devices: list[Device], started_at: float, duration_s: float) -> Measurement:
    components: dict[str, dict[str, DeviceEnergy]] = {}
    for comp, key, name, joules, method, rel in devices:
        components.setdefault(comp, {})[key] = DeviceEnergy(joules, method, rel, name)
    return Measurement(
        name="run",
        started_at=datetime.fromtimestamp(started_at, tz=timezone.utc),
        duration_s=duration_s,
        components={c: ComponentEnergy(d) for c, d in components.items()},
    )


def carbon_block(
    m: Measurement, g_per_kwh: float, pue: float = 1.1, kind: str = "average"
) -> dict[str, Any]:
    """A ``carbon`` block as accounting writes it, for a constant intensity."""
    facility = m.total_j * pue
    intensity_rel = 0.25
    return Carbon(
        kg=facility / KWH * g_per_kwh / 1000,
        intensity_g_per_kwh=g_per_kwh,
        source=f"Electricity Maps yearly mean, zone DE, 2023 ({kind}, lifecycle)",
        pue=pue,
        pue_source="given by the user",
        it_energy_j=m.total_j,
        facility_energy_j=facility,
        method="yearly average intensity × energy",
        uncertainty_rel=math.hypot(m.uncertainty_rel, intensity_rel),
        intensity_uncertainty_rel=intensity_rel,
        kind=kind,
        scope="lifecycle",
        resolution="yearly",
    ).to_dict()


def cost_block(m: Measurement, usd_per_kwh: float, pue: float = 1.1) -> dict[str, Any]:
    facility = m.total_j * pue
    return Cost(
        usd=facility / KWH * usd_per_kwh,
        usd_per_kwh_effective=usd_per_kwh,
        source=f"${usd_per_kwh:.3f}/kWh flat, given by the user",
        method="flat price × energy",
        pue=pue,
        pue_source="given by the user",
        it_energy_j=m.total_j,
        facility_energy_j=facility,
        uncertainty_rel=m.uncertainty_rel,
    ).to_dict()


def make_run(
    store: Store,
    *,
    devices: list[Device] | None = None,
    start: float = T0,
    duration_s: float = 3600.0,
    name: str | None = "train",
    tags: dict[str, str] | None = None,
    status: str = "completed",
    carbon: str | dict[str, Any] = "400",
    price: float | None = 0.2,
    pue: float = 1.1,
    samples: list[Sample] | None = None,
    finish: bool = True,
    run_id: str | None = None,
) -> str:
    """Store one run; ``carbon`` is a g/kWh figure, ``unknown``, ``unavailable`` or a block."""
    devices = a100_devices() if devices is None else devices
    run_id = store.create_run(
        name=name,
        command=["python", "train.py"],
        tags=tags or {},
        started_at=start,
        pid=1,
        hostname="elsewhere",
        run_id=run_id,
    )
    gpus = [{"index": i, "name": d[2]} for i, d in enumerate(d for d in devices if d[0] == "gpu")]
    env = {"cpu": {"model": XEON, "logical_cores": 112}, "gpu": {"gpus": gpus} if gpus else {}}
    store.set_environment(run_id, env)
    if samples:
        store.add_samples(run_id, samples)
    m = measurement(devices, start, duration_s)
    if isinstance(carbon, dict):
        block = carbon
    elif carbon == "unknown":
        block = unknown_carbon()
    elif carbon == "unavailable":
        block = unavailable("kg", "the trace DE_2022.csv does not cover 2024-05-01")
    else:
        block = carbon_block(m, float(carbon), pue)
    cost = cost_block(m, price, pue) if price is not None else {"usd": None, "status": "unknown"}
    store.update_extra(run_id, {"carbon": block, "cost": cost})
    if finish:
        store.finish_run(
            run_id,
            status=status,
            exit_code=0 if status == "completed" else 1,
            duration_s=duration_s,
            energy=m.to_dict(),
            ended_at=start + duration_s,
        )
    return run_id
