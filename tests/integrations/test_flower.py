"""The Flower client mod inside a real flwr ClientApp (skipped where flwr is not installed).

flwr 1.42 pins protobuf<7, rich<15, fastapi 0.138 and packaging<26, so it is not in
the test extras: ``make test`` runs it in ``.venv-flower`` (test_flower_venv.py), and it
runs wherever ``pip install 'greenml[federated]'`` works.
"""

from __future__ import annotations

from typing import Any

import pytest

flwr = pytest.importorskip("flwr")

import numpy as np  # noqa: E402

from greenml.advise.federated import FederatedMeter  # noqa: E402
from greenml.integrations.flower import energy_mod  # noqa: E402
from greenml.measure.meter import Meter  # noqa: E402
from greenml.measure.sensors.fake import FakeDevice, FakeSensor  # noqa: E402


def test_a_client_app_with_the_mod_records_rounds_clients_and_bytes() -> None:
    from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.supercore.task_identity import TaskIdentity

    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
    clock = [0.0]
    sensor = FakeSensor([FakeDevice("gpu0", [(0.0, 100.0)])], clock=lambda: clock[0])
    meter = FederatedMeter(Meter(sensors=[sensor], sample_hz=0, clock=lambda: clock[0]))
    app = ClientApp(mods=[energy_mod(meter)])

    @app.train()  # type: ignore[misc]
    def train(msg: Any, context: Any) -> Any:
        clock[0] += 1.0  # one second at 100 W
        new = [a + 1 for a in msg.content["arrays"].to_numpy_ndarrays()]
        return Message(RecordDict({"arrays": ArrayRecord(new)}), reply_to=msg)

    for rnd in (1, 2):
        for node in (11, 12):
            arrays = ArrayRecord([np.zeros((10, 64)), np.zeros(10)])
            content = RecordDict({"arrays": arrays, "config": ConfigRecord({"server-round": rnd})})
            msg = Message(content=content, dst_node_id=node, message_type="train")
            ctx = Context(run_id=1, node_id=node, node_config={}, state=RecordDict(), run_config={})
            app(msg, ctx)
    got = [(r.round, r.client) for r in meter.run.rounds]
    assert got == [(1, "11"), (1, "12"), (2, "11"), (2, "12")]
    first = meter.run.rounds[0]
    assert first.bytes_down == first.bytes_up == arrays.count_bytes()
    assert first.energy_j == pytest.approx(100.0)
