"""``greenml.Run`` with a node meter: the record's node block, stored and read back, and the
carbon figure still that of the components (the node is beside them, not added)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import greenml
from greenml.measure.node.sensor import NodeSensor
from greenml.measure.node.spec import parse_node_meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.store import open_store
from tests.measure.node.standins import Plug, serve


def test_an_in_process_run_stores_node_components_and_residual(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               ) -> None:  # fmt: skip
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    db = str(tmp_path / "runs.db")
    gpu = FakeSensor([FakeDevice("gpu0", [(0, 200.0)])])
    with serve(Plug(260.0), "tasmota") as addr:
        node = NodeSensor(parse_node_meter(f"tasmota://{addr}"), period_s=0.05)
        with greenml.Run("with-node", ci=400, db=db, sensors=[gpu, node], sample_hz=10,
                         tick_s=0.05) as run:  # fmt: skip
            time.sleep(1.0)
    record = run.record
    assert record is not None and record.node is not None
    block = record.node
    assert block.source == "node (tasmota)" and block.method == "power-integrated"
    assert block.components_j == pytest.approx(record.energy.total_j)
    assert record.energy.total_j == pytest.approx(200 * record.duration_s, rel=0.1)
    assert block.energy_j == pytest.approx(260 * record.duration_s, rel=0.2)
    assert block.residual_j == pytest.approx(block.energy_j - block.components_j)
    assert set(record.energy.components) == {"gpu"}  # the node is not a component
    assert record.carbon is not None
    assert record.carbon.kg == pytest.approx(record.energy.total_kwh * 0.4, rel=0.01)
    with open_store(db) as store:
        assert store.get_run_record(record.id).node == block
