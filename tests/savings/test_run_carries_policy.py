"""``greenml.Run`` (in-process) records the savings policy in force, typed, as stored."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import greenml
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.savings.policy_file import write_item
from greenml.store import open_store


def test_an_in_process_run_records_the_policy_of_its_workload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    config = tmp_path / "xdg" / "greenml" / "config.toml"
    write_item(config, "gpu-power-a100", {"power_limit_w": 250, "workload": "train"})
    write_item(config, "cache", {"cache": True})
    db = str(tmp_path / "runs.db")
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 250.0)])])
    with greenml.Run("train", db=db, sensors=[sensor], tick_s=0.02) as run:
        time.sleep(0.05)
    record = run.record
    assert record is not None and record.policy is not None
    assert record.policy.items == ["cache", "gpu-power-a100"]
    assert record.policy.power_limit_w == 250.0 and record.policy.cache is True
    assert record.policy.source == str(config)
    with greenml.Run("eval", db=db, sensors=[FakeSensor([FakeDevice("gpu0", [(0, 9.0)])])],
                     tick_s=0.02) as other:  # fmt: skip
        time.sleep(0.05)
    assert other.record is not None and other.record.policy is not None
    assert other.record.policy.items == ["cache"] and other.record.policy.power_limit_w is None
    with open_store(db) as store:
        assert store.get_record(record.id)["policy"]["items"] == ["cache", "gpu-power-a100"]
