"""Typed record blocks give back exactly the JSON they read; the store never imports the ledger."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import greenml.store
from greenml.errors import RecordTypeError
from greenml.record.blocks import CarbonBlock
from greenml.record.run_record import EnergyBlock, RunRecord
from tests.run_records import record as hand_record


def test_keys_keep_their_order_presence_and_number_types() -> None:
    block = {"uncertainty_rel": 0, "components": {}, "total_kwh": 1, "total_j": 3.6e6,
             "note": None, "later": [1, 2.0]}  # fmt: skip
    typed = EnergyBlock.from_dict(block)
    assert typed.total_kwh == 1 and typed.note is None and typed.other == {"later": [1, 2.0]}
    assert json.dumps(typed.to_dict()) == json.dumps(block)  # 0 stays 0, null stays null
    assert "notes" not in typed.to_dict()  # absent stays absent


def test_a_changed_field_is_written_and_a_built_record_has_every_required_key() -> None:
    old = RunRecord.from_dict(hand_record(1000.0, ci_g_per_kwh=None))
    assert old.carbon is None and "carbon" not in old.to_dict()
    changed = dataclasses.replace(old, carbon=CarbonBlock(status="unknown", kg=None, hint="h"))
    assert changed.to_dict()["carbon"] == {"status": "unknown", "kg": None, "hint": "h"}
    built = RunRecord(id="abc", name=None, started_at="2026-01-01T00:00:00+00:00",
                      ended_at=None, duration_s=None, exit_code=None, status="running")  # fmt: skip
    data = built.to_dict()
    assert {"command", "tags", "energy", "environment", "windows"} <= set(data)
    assert data["energy"]["components"] == {} and "schema_version" not in data
    assert RunRecord.from_dict(data, strict=True) == built


def test_strict_reading_names_the_path_of_the_wrong_value() -> None:
    bad = hand_record(1000.0, gpu_j=900.0)
    bad["energy"]["components"]["gpu"]["devices"]["gpu0"]["method"] = "guessed"
    with pytest.raises(RecordTypeError, match=r"energy\.components\.gpu\.devices\.gpu0\.method"):
        RunRecord.from_dict(bad, strict=True)
    lenient = RunRecord.from_dict(bad)
    device = lenient.energy.components["gpu"].devices["gpu0"]
    assert device.other == {"method": "guessed"} and lenient.to_dict() == bad


def test_the_store_never_imports_the_ledger() -> None:
    folder = Path(greenml.store.__file__).parent
    offenders = [p.name for p in folder.glob("*.py") if "greenml.ledger" in p.read_text()]
    assert offenders == []
