"""Stored runs for the export tests: greenml-measured records in a temporary store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from greenml.store import open_store
from greenml.store.transfer import FORMAT, import_run
from tests.run_records import record


def greenml_record(run_id: str, energy_j: float, *, gpu_j: float | None = None,
                   ci: float | None = 400.0) -> dict[str, Any]:  # fmt: skip
    """A finished greenml run on a GPU node in Germany, its carbon accounted."""
    rec = record(energy_j, gpu_j=gpu_j, ci_g_per_kwh=ci, run_id=run_id)
    rec["environment"] = {
        "os": {"system": "Linux"}, "python": {"version": "3.11.7"},
        "cpu": {"model": "AMD EPYC 7763"},
        "gpu": {"gpus": [{"index": i, "name": "NVIDIA H100 80GB HBM3"} for i in range(4)]},
    }  # fmt: skip
    if rec.get("carbon"):
        rec["carbon"].update({"location": "DE", "source": "Ember 2024 annual average (DE)"})
    return rec


def store_records(db: Path, *records: dict[str, Any]) -> str:
    """Store ``records`` in the SQLite file ``db``; its URL."""
    url = f"sqlite:///{db}"
    with open_store(url) as store:
        for rec in records:
            import_run(store, {"format": FORMAT, "record": rec, "windows": [], "samples": []},
                       None, upload=False)  # fmt: skip
    return url
