"""verify: a change that did not save is said so and offered for undo; the report sums only
verified savings."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from greenml.savings import state
from greenml.savings.apply import apply_item
from greenml.savings.verify import verify_all
from greenml.store import open_store
from tests.savings.cli_inproc import Done, run_cli
from tests.savings.project import DAY0, add_run, plant


def test_a_change_that_did_not_save_is_reported_and_offered_for_undo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"

    def greenml_cli(*argv: str) -> Done:
        return run_cli(capsys, monkeypatch, tmp_path / "xdg", *argv)

    with open_store(str(db)) as store:
        plant(store)
    planned = greenml_cli("savings", "plan", "--db", str(db), "--format", "json")
    assert planned.returncode == 0
    with open_store(str(db)) as store:
        apply_item(store, "gpu-power-nvidia-a100", tmp_path / "c.toml", tmp_path / "out")
        block = {"status": "ok", "items": ["gpu-power-nvidia-a100"], "power_limit_w": 250.0}
        for day, watts in enumerate([332.0, 329.0, 335.0]):  # the limit did not hold: no saving
            add_run(store, name="train", start=DAY0 + timedelta(days=20 + day), duration_s=7200,
                    power_w=[watts], limit_w=400, samples=40, utilization=[0.9], work=1e6,
                    intensity=307.0, policy=block)  # fmt: skip
        outcome = verify_all(store)[0]
        assert outcome.status == "not-saved" and outcome.ledger_seq is None
        assert state.verified(store) == {}
    done = greenml_cli("savings", "verify", "--db", str(db))
    assert "NOT SAVED" in done.stdout
    assert "greenml savings undo gpu-power-nvidia-a100" in done.stdout
    md = greenml_cli("savings", "plan", "--db", str(db), "--format", "md").stdout
    verified = md.split("## Verified savings")[1].split("##")[0]
    assert "gpu-power-nvidia-a100: did NOT save" in verified and "None yet" in verified
    assert not db.with_name("runs.ledger.jsonl").exists()  # nothing ledgered


def test_the_report_sums_verified_savings_apart_from_expected(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"

    def greenml_cli(*argv: str) -> Done:
        return run_cli(capsys, monkeypatch, tmp_path / "xdg", *argv)

    with open_store(str(db)) as store:
        plant(store)
    greenml_cli("savings", "plan", "--db", str(db), "--format", "json")
    with open_store(str(db)) as store:
        apply_item(store, "gpu-power-nvidia-a100", tmp_path / "c.toml", tmp_path / "out")
        block = {"status": "ok", "items": ["gpu-power-nvidia-a100"], "power_limit_w": 250.0}
        for day, watts in enumerate([244.0, 246.0, 245.0]):
            add_run(store, name="train", start=DAY0 + timedelta(days=20 + day), duration_s=7560,
                    power_w=[watts], limit_w=250, samples=40, utilization=[0.9], work=1e6,
                    intensity=307.0, policy=block)  # fmt: skip
        assert verify_all(store)[0].status == "verified"
    import json

    data = json.loads(greenml_cli("savings", "plan", "--db", str(db), "--format", "json"
                                  ).stdout)  # fmt: skip
    md = greenml_cli("savings", "plan", "--db", str(db), "--format", "md").stdout
    (saving,) = data["verified"]
    expected = next(i for i in data["items"] if i["id"] == "gpu-power-nvidia-a100")
    # the verified yearly figure: the plan's share × measured ÷ expected saving per unit of work
    ratio = saving["saving_rel"] / expected["settings"]["expected_saving_rel"]
    assert 0.9 < ratio < 1.1
    total = data["verified_total"]["kwh_per_year"]
    assert 0 < total < data["combined"]["kwh_per_year"]
    assert "Verified, all together" in md and "Expected savings below are not added" in md
