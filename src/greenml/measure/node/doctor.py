"""``greenml doctor``'s node-meter finding: the configured meter reached or not, and why."""

from __future__ import annotations

from greenml.errors import ConfigError
from greenml.measure.doctor import ABSENT, UNSUPPORTED, USABLE, DeviceReport, Finding, Machine

TITLE = "Node meter (Redfish, IPMI DCMI, hwmon PSU, smart plug, PDU, JSON)"
FIX = ("name one: greenml run --node-meter redfish://USER:PASS@BMC …, or GREENML_NODE_METER, "
       "or [node] meter in the config file")  # fmt: skip


def probe_node_meter(machine: Machine) -> Finding:
    """Reads the configured node meter once: usable with its reading, or why it is not."""
    from greenml.measure.node.discover import configured_node_meter
    from greenml.measure.node.sensor import NodeSensor
    from greenml.measure.node.spec import parse_node_meter

    try:
        spec = configured_node_meter()
        if spec is None:
            return Finding("node-meter", TITLE, ABSENT, "no node meter configured", FIX)
        sensor = NodeSensor(parse_node_meter(spec, machine.path("/")), poll=False)
    except ConfigError as exc:
        return Finding("node-meter", TITLE, UNSUPPORTED, str(exc), FIX)
    try:
        label = sensor.source.label
        latest = sensor.read_power_w().get("node0")
        if sensor.error is not None or latest is None:
            return Finding("node-meter", TITLE, UNSUPPORTED,
                           f"{label} not reached: {sensor.error or 'no reading'}")  # fmt: skip
        devices = tuple(DeviceReport.of(d) for d in sensor.devices)
        return Finding("node-meter", TITLE, USABLE, f"{label} reached: {latest:.1f} W now", "",
                       devices)  # fmt: skip
    finally:
        sensor.close()
