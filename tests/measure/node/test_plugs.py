"""Shelly, Tasmota and JSON node meters against local stand-ins, and the node beside a Meter."""

from __future__ import annotations

import time

import pytest

from greenml.errors import ConfigError
from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.node.balance import node_block
from greenml.measure.node.sensor import NodeSensor
from greenml.measure.node.spec import parse_node_meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from tests.measure.node.standins import Plug, serve


@pytest.mark.parametrize(("kind", "spec"), [
    ("shelly", "shelly://{addr}?id=1"),
    ("tasmota", "tasmota://{addr}"),
    ("json", "http://{addr}/power#$.node.input_watts"),
])  # fmt: skip
def test_each_plug_is_read_at_its_documented_path(kind: str, spec: str) -> None:
    plug = Plug(151.5)
    with serve(plug, kind) as addr:
        source = parse_node_meter(spec.format(addr=addr))
        try:
            assert source.read().power_w == 151.5
        finally:
            source.close()
    assert plug.requests and all(r != "/" for r in plug.requests)
    if kind == "shelly":
        assert plug.requests == ["/rpc/Switch.GetStatus?id=1"]


def test_a_wrong_path_is_a_sensor_error_and_the_sensor_says_why() -> None:
    with serve(Plug(50.0), "tasmota") as addr:
        sensor = NodeSensor(parse_node_meter(f"http://{addr}/nothing#$.w"), poll=False)
        try:
            assert sensor.error is not None and "HTTP 404" in sensor.error
            assert sensor.read_power_w() == {}
        finally:
            sensor.close()


def test_the_node_stands_beside_the_components_with_the_residual() -> None:
    plug = Plug(300.0)
    components = FakeSensor([
        FakeDevice("gpu0", [(0.0, 150.0)], method=POWER_INTEGRATED, uncertainty_rel=0.05),
        FakeDevice("cpu0", [(0.0, 60.0)], method=POWER_INTEGRATED, uncertainty_rel=0.10),
    ])  # fmt: skip
    with serve(plug, "shelly") as addr:
        node = NodeSensor(parse_node_meter(f"shelly://{addr}"), period_s=0.05)
        with Meter(sensors=[components, node], sample_hz=20) as meter:
            meter.begin_window("run")
            time.sleep(1.0)
            m = meter.end_window("run")
    assert "node" not in m.components  # never summed with the components
    assert m.node is not None
    assert m.total_j == pytest.approx(210 * m.duration_s, rel=0.15)
    assert m.node.energy_j == pytest.approx(300 * m.duration_s, rel=0.15)
    # the plug's ±2 %, widened by the Meter for sampling a 1 s window
    assert m.node.method == POWER_INTEGRATED and 0.02 <= m.node.uncertainty_rel < 0.1
    block = node_block(m)
    assert block is not None and block["source"] == "node (shelly)"
    assert block["residual_j"] == pytest.approx(block["energy_j"] - m.total_j)
    assert block["residual_share"] == pytest.approx(90 / 300, abs=0.05)
    # independent sensors: the residual's spread is the quadrature of both
    node_unc = block["energy_j"] * m.node.uncertainty_rel
    comp_unc = m.uncertainty_rel * m.total_j
    assert block["residual_uncertainty_j"] == pytest.approx((node_unc**2 + comp_unc**2) ** 0.5)


@pytest.mark.parametrize("spec", [
    "plug://x", "shelly://", "snmp://public@pdu/notanoid", "http://x/y", "redfish://h:99999",
    "tasmota://h?uncertainty=5", "shelly://h?id=a", "hwmon:",
])  # fmt: skip
def test_a_bad_node_meter_string_is_one_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="node meter"):
        parse_node_meter(spec)
