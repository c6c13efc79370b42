"""Runs to upload, made the way greenml stores them (a local store, then export_run)."""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement, Sample
from greenml.store import open_store
from greenml.store.transfer import export_run

T0 = 1714564800.0  # 2024-05-01 12:00 UTC


def local_document(
    folder: Path, name: str = "train", tags: dict[str, str] | None = None, *,
    seconds: int = 60, gpus: int = 2, gpu_j: float = 12000.0, kg: float | None = 0.25,
    start: float = T0,
) -> dict[str, Any]:  # fmt: skip
    """The upload document of a finished run with ``gpus`` GPUs sampled at 1 Hz."""
    with open_store(str(folder / f"local-{name}-{start}.db")) as local:
        run_id = local.create_run(name=name, command=["python", "train.py"], tags=tags or {},
                                  started_at=start, pid=1, hostname="h")  # fmt: skip
        local.add_samples(run_id, [
            Sample(f"gpu{d}", "gpu", start + k, 150.0 + 50 * d + (k % 10), {"utilization": 0.8})
            for d in range(gpus) for k in range(seconds)
        ])  # fmt: skip
        devices = {f"gpu{d}": DeviceEnergy(energy_j=gpu_j / gpus, method="counter",
                                           uncertainty_rel=0.05, name="NVIDIA A100")
                   for d in range(gpus)}  # fmt: skip
        cpu = {"cpu0": DeviceEnergy(energy_j=900.0, method="estimated", uncertainty_rel=0.3,
                                    name="Xeon")}  # fmt: skip
        window = Measurement(name="run", started_at=datetime.fromtimestamp(start, timezone.utc),
                             duration_s=float(seconds), components={
                                 "gpu": ComponentEnergy(devices=devices),
                                 "cpu": ComponentEnergy(devices=cpu)})  # fmt: skip
        local.add_window(run_id, window)
        if kg is not None:
            local.update_extra(run_id, {"carbon": {
                "status": "ok", "kg": kg, "uncertainty_rel": 0.1, "intensity_g_per_kwh": 350.0,
                "source": "packaged yearly mean", "location": "DE",
                "intensity_series": [[start, 340.0], [start + seconds / 2, 360.0]]}})  # fmt: skip
        local.finish_run(run_id, status="completed", exit_code=0, duration_s=float(seconds),
                         energy=window.to_dict(), ended_at=start + seconds)  # fmt: skip
        return export_run(local, run_id, user="alice")


def renamed(document: dict[str, Any], run_id: str, **record: Any) -> dict[str, Any]:
    """A copy of ``document`` as another run (new id, other record fields)."""
    out = copy.deepcopy(document)
    out["record"].update(id=run_id, **record)
    return out
