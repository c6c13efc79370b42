"""The node's own meter beside the components: ground truth for what greenml sums.

A node meter (a BMC over Redfish or IPMI DCMI, a PSU's hwmon chip, a smart plug,
a PDU outlet, any JSON endpoint) is a plain :class:`~greenml.measure.sensors.base.Sensor`
with one device of component ``node``; the Meter keeps its energy beside the
components, and :mod:`~greenml.measure.node.balance` sets the two side by side:
node, components and the residual (PSU losses, fans, NICs, disks) with its
uncertainty. :mod:`~greenml.measure.node.calibration` fits the node's overhead
from runs that had both, for the runs that follow without a meter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "NodeSensor": "greenml.measure.node.sensor",
    "NodeSource": "greenml.measure.node.sources",
    "parse_node_meter": "greenml.measure.node.spec",
    "node_sensors": "greenml.measure.node.discover",
}

__all__ = ["NodeSensor", "NodeSource", "node_sensors", "parse_node_meter"]

if TYPE_CHECKING:
    from greenml.measure.node.discover import node_sensors
    from greenml.measure.node.sensor import NodeSensor
    from greenml.measure.node.sources import NodeSource
    from greenml.measure.node.spec import parse_node_meter


__getattr__ = lazy_exports(__name__, _LAZY)
