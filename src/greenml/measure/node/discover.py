"""The configured node meter, opened as a sensor, or the reason it is not used."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from greenml.errors import ConfigError

if TYPE_CHECKING:  # the meter's readers are imported only when one is configured
    from greenml.measure.node.sensor import NodeSensor

NODE_METER_ENV = "GREENML_NODE_METER"


def configured_node_meter() -> str | None:
    """The node-meter string: ``$GREENML_NODE_METER`` > ``[node] meter`` in the config file."""
    from greenml.config.settings import setting

    value = setting("node.meter")
    return str(value) if value else None


def node_sensors(sys_root: Path = Path("/")) -> tuple[list[NodeSensor], list[str]]:
    """The configured node meter as a sensor, with a note; none (and why) when it cannot be read.

    A meter that does not answer is a note, never an error: the run goes on
    without the node figure, and says so.

    Raises:
        ConfigError: The configured string names no node meter greenml knows.
    """
    spec = configured_node_meter()
    if spec is None:
        return [], []
    from greenml.measure.node.sensor import NodeSensor
    from greenml.measure.node.spec import parse_node_meter

    source = parse_node_meter(spec, sys_root)
    sensor = NodeSensor(source)
    if sensor.error is not None:
        sensor.close()
        return [], [f"node meter {source.label} not used: {sensor.error}"]
    return [sensor], []


def node_sensors_safely(sys_root: Path = Path("/")) -> tuple[list[NodeSensor], list[str]]:
    """:func:`node_sensors`, a bad setting turned into a note (a run is never stopped by it)."""
    try:
        return node_sensors(sys_root)
    except ConfigError as exc:
        return [], [f"node meter not used: {exc}"]
