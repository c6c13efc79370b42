"""The batch size the optimizer settled on becomes a policy item with its measured saving."""

from __future__ import annotations

from pathlib import Path

import pytest

from greenml.optimize.batch_size import BatchSizeOptimizer
from greenml.savings.plan import plan_savings
from greenml.store import open_store
from tests.savings.project import plant


def test_the_optimizers_best_size_is_planned_with_its_saving(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "runs.db")) as store:
        plant(store)
        bso = BatchSizeOptimizer("train", [32, 64, 128], 64, max_power_w=400.0, store=store)
        for size, joules in [(64, 2.40e6), (64, 2.44e6), (128, 1.98e6), (128, 2.02e6),
                             (32, 2.9e6)]:  # fmt: skip
            bso.report(size, joules, 7000.0, reached=True)
        records = [store.get_record(r["id"]) for r in store.list_runs(limit=0)]
        plan = plan_savings(records, store.samples, state=store.get_state)
    item = next(i for i in plan.items if i.id == "batch-size-train")
    c = item.candidate
    assert c.settings["batch_size"] == 128 and c.action == "policy"
    saving = 1 - 2.00e6 / 2.42e6
    assert c.settings["expected_saving_rel"] == pytest.approx(saving)
    assert 0 < c.uncertainty_rel < 0.2 and c.energy_j > 0
