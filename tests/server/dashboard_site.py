"""A project of varied runs for the dashboard's tests: names, users, teams, days, work
tags, prices and Slurm jobs, each a copy of one run made the way greenml stores runs."""

from __future__ import annotations

import copy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.store.repository import Store
from greenml.store.transfer import import_run
from tests.server.helpers import T0, local_document

NAMES = ("resnet-50 fine-tune", "bert-base pretraining", "gpt-small evaluation")
USERS = ("alice", "bob", "carol")


def varied_runs(folder: Path, count: int, start: float = T0) -> list[dict[str, Any]]:
    """``count`` upload documents over ``count // 3`` days, run ``k`` using (k + 1) × 1 kJ."""
    base = local_document(folder, name="base", seconds=5, gpus=1)
    out = []
    for k in range(count):
        doc = copy.deepcopy(base)
        record = doc["record"]
        begun = start + k * 8 * 3600.0
        joules = 1000.0 * (k + 1)
        record.update(
            id=f"run{k:04d}", name=NAMES[k % 3],
            started_at=datetime.fromtimestamp(begun, timezone.utc).isoformat(),
            tags={"team": "vision" if k % 2 else "nlp", "samples": str(1000 * (k % 5 + 1))},
        )  # fmt: skip
        _scale_energy(record["energy"], joules / record["energy"]["total_j"])
        record["carbon"] = {**record["carbon"], "kg": joules * 1e-7}
        record["cost"] = {"status": "ok", "usd": joules * 2e-8, "uncertainty_rel": 0.1,
                          "basis": "electricity", "source": "test tariff"}  # fmt: skip
        record["job"] = {"job_id": str(4000 + k // 2), "source": "slurm",
                         "node": f"gpu-node-{k % 4:02d}"}  # fmt: skip
        doc["user"] = USERS[(k // 2) % 3]
        out.append(doc)
    return out


def _scale_energy(block: dict[str, Any], factor: float) -> None:
    """Every energy figure of an energy block (total, components, devices) times ``factor``."""
    for key in ("total_j", "energy_j"):
        if isinstance(block.get(key), int | float):
            block[key] *= factor
    if isinstance(block.get("total_kwh"), int | float):
        block["total_kwh"] *= factor
    for child in (*(block.get("components") or {}).values(),
                  *(block.get("devices") or {}).values()):  # fmt: skip
        if isinstance(child, dict):
            _scale_energy(child, factor)


def load(store: Store, project_id: int, documents: list[dict[str, Any]]) -> None:
    """Upload every document to the project."""
    for doc in documents:
        import_run(store, doc, project_id)
