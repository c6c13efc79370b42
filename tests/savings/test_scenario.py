"""Done when: planted waste → plan ranks it → apply writes policy and files → later runs carry
the policy → verify writes verified savings to the ledger (which still verifies)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from greenml.ledger.audit import verify as verify_ledger
from greenml.ledger.file import entries
from greenml.savings import state
from greenml.savings.apply import apply_item, undo_item
from greenml.savings.policy import load_policy
from greenml.savings.verify import verify_all
from greenml.store import open_store
from tests.helpers import greenml_cli
from tests.savings.project import DAY0, add_run, plant


def _plan(db: Path) -> dict:
    done = greenml_cli("savings", "plan", "--db", str(db), "--project", "vision",
                       "--format", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_planted_waste_is_ranked_applied_carried_and_verified(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with open_store(str(db)) as store:
        ids = plant(store)
    plan = _plan(db)
    by_id = {i["id"]: i for i in plan["items"]}
    power = by_id["gpu-power-nvidia-a100"]
    hours = by_id["green-hours-us-cal-ciso"]
    idle = by_id["idle-gpu"]
    # the three planted wastes, each with a figure and its evidence
    assert power["settings"]["power_limit_w"] == 250.0
    assert power["kwh_per_year"] > 0 and power["action"] == "policy"
    assert set(power["evidence_runs"]) == set(ids["default"] + ids["capped"])
    assert 0.25 < hours["settings"]["expected_saving_rel"] < 0.45  # CISO: 308 → ~195 g/kWh
    assert hours["co2_kg_per_year"] > 0 and hours["kwh_per_year"] == 0
    assert idle["action"] == "artifact" and idle["kwh_per_year"] > 0
    assert [i["rank"] for i in plan["items"]] == list(range(1, len(plan["items"]) + 1))
    co2 = [i["co2_kg_per_year"] for i in plan["items"]]
    assert co2 == sorted(co2, reverse=True)
    # combined: never more than the sum of the parts, never more than the footprint
    combined = plan["combined"]["co2_kg_per_year"]
    assert combined <= sum(co2) + 1e-9
    assert combined < plan["footprint"]["co2_kg_per_year"]
    assert sum(i["marginal_co2_kg_per_year"] for i in plan["items"]) == pytest.approx(combined)

    config = tmp_path / "home" / "config.toml"
    config.parent.mkdir()
    config.write_text('# my settings\n[location]\nzone = "US-CAL-CISO"\n', encoding="utf-8")
    out = tmp_path / "deploy"
    with open_store(str(db)) as store:
        applied = apply_item(store, "gpu-power-nvidia-a100", config, out)
        assert applied.policy is not None and applied.files == ()
        apply_item(store, "green-hours-us-cal-ciso", config, out)
        apply_item(store, "idle-gpu", config, out)
    text = config.read_text(encoding="utf-8")
    assert text.startswith("# my settings") and 'zone = "US-CAL-CISO"' in text  # kept
    policy = load_policy(config)
    assert policy["gpu-power-nvidia-a100"]["power_limit_w"] == 250.0
    assert policy["green-hours-us-cal-ciso"]["when"] == "green"
    assert "idle-gpu" not in policy  # outside greenml: a file, not a policy
    keda = yaml.safe_load((out / "idle-gpu.keda.yaml").read_text())
    assert keda["kind"] == "ScaledObject" and keda["spec"]["minReplicaCount"] == 0
    assert "--begin=" in (out / "green-hours-us-cal-ciso.slurm.sh").read_text()

    # a later run (a real `greenml run`) carries the policy in force
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    (tmp_path / "xdg" / "greenml").mkdir(parents=True)
    (tmp_path / "xdg" / "greenml" / "config.toml").write_text(text, encoding="utf-8")
    done = greenml_cli("run", "--db", str(tmp_path / "later.db"), "--name", "train", "--json-out",
                       str(tmp_path / "later.json"), "--", "true", **env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    later = json.loads((tmp_path / "later.json").read_text())
    assert later["policy"]["items"] == ["gpu-power-nvidia-a100", "green-hours-us-cal-ciso"]
    assert later["policy"]["power_limit_w"] == 250.0

    # runs under the policy: 250 W, started in the green hours (17:00 UTC, ~195 g/kWh)
    block = {k: later["policy"][k] for k in ("status", "items", "power_limit_w", "when")}
    with open_store(str(db)) as store:
        assert verify_all(store)[0].status == "waiting"  # too few runs after the change
        for day, (watts, ci) in enumerate([(244.0, 194.0), (246.0, 199.0), (245.0, 196.0),
                                           (243.0, 193.0), (247.0, 198.0)]):  # fmt: skip
            add_run(store, name="train", start=DAY0 + timedelta(days=10 + day, hours=11),
                    duration_s=7560, power_w=[watts], limit_w=250, samples=40,
                    utilization=[0.95], work=1e6, intensity=ci, policy=block)  # fmt: skip
        outcomes = {o.item_id: o for o in verify_all(store)}
        power_done, hours_done = outcomes["gpu-power-nvidia-a100"], outcomes[
            "green-hours-us-cal-ciso"]
        assert power_done.status == "verified" and hours_done.status == "verified"
        assert len(power_done.after) >= (power_done.needed or 0)
        assert 0.10 < (power_done.saving_rel or 0) < 0.30  # vs the 400 W runs
        assert 0.33 < (hours_done.saving_rel or 0) < 0.40  # g/kWh: 308 → 196, the 250 W apart
        assert 0 < (hours_done.uncertainty_rel or 0) < 0.05
        kept = state.verified(store)
        assert {d["item"] for d in kept.values()} == {"gpu-power-nvidia-a100",
                                                      "green-hours-us-cal-ciso"}
        again = verify_all(store)  # nothing new: no second ledger entry
        assert all(o.ledger_seq is None for o in again)
        ledger = db.with_name("runs.ledger.jsonl")
        savings = [e for e in entries(ledger) if e.kind == "saving"]
        assert len(savings) == 2
        result = verify_ledger(ledger, store=store)
        assert [p for p in result.problems if p.seq in {e.seq for e in savings}] == []
        assert undo_item(store, "gpu-power-nvidia-a100", config) is True
    assert "gpu-power-nvidia-a100" not in load_policy(config)
