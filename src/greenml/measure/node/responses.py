"""Watts (and joules) out of what a node meter answers: pure parsers, one per format.

Each takes the decoded body as it came over the wire and returns a
:class:`NodeReading`, or raises :class:`~greenml.errors.SensorError` with one
line saying what was missing. No I/O here: :mod:`greenml.measure.node.sources`
fetches, these read (and Hypothesis tests them with bodies of any shape).

Formats, as their documentation gives them:

- Redfish ``Power`` (DSP0268, ``Power.v1_x``): ``PowerControl[0].PowerConsumedWatts``;
  the newer ``EnvironmentMetrics``: ``PowerWatts.Reading`` (and ``EnergykWh.Reading``).
- IPMI DCMI (``ipmitool dcmi power reading``): the line
  ``Instantaneous power reading:   123 Watts``.
- Shelly Gen2 ``Switch.GetStatus``: ``apower`` (W) and ``aenergy.total`` (Wh).
- Tasmota ``Status 8``: ``StatusSNS.ENERGY.Power`` (W) and ``.Total`` (kWh).
- A JSON document and a JSONPath (jsonpath-ng) that selects one number of watts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from greenml.errors import SensorError

J_PER_WH = 3600.0


@dataclass(frozen=True)
class NodeReading:
    """One reading of a node meter: watts now, and its energy counter when it has one."""

    power_w: float
    energy_j: float | None = None


def _watts(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SensorError(f"{what} is not a number: {value!r:.60}")
    watts = float(value)
    if not math.isfinite(watts) or watts < 0:
        raise SensorError(f"{what} is not a power in watts: {watts!r}")
    return watts


def _get(body: Any, *path: str | int) -> Any:
    """``body[path[0]][path[1]]…``, or None when any step is missing."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(body, list) or len(body) <= step:
                return None
        elif not isinstance(body, dict) or step not in body:
            return None
        body = body[step]
    return body


def redfish_power(body: Any) -> NodeReading:
    """A Redfish ``Power`` resource: the first ``PowerControl`` with ``PowerConsumedWatts``."""
    controls = _get(body, "PowerControl")
    if isinstance(controls, list):
        for control in controls:
            if _get(control, "PowerConsumedWatts") is not None:
                return NodeReading(_watts(control["PowerConsumedWatts"], "PowerConsumedWatts"))
    raise SensorError("Redfish Power has no PowerControl with PowerConsumedWatts")


def redfish_environment(body: Any) -> NodeReading:
    """A Redfish ``EnvironmentMetrics`` resource: ``PowerWatts.Reading`` (``EnergykWh``)."""
    watts = _get(body, "PowerWatts", "Reading")
    if watts is None:
        raise SensorError("Redfish EnvironmentMetrics has no PowerWatts.Reading")
    energy = _get(body, "EnergykWh", "Reading")
    energy_j = _watts(energy, "EnergykWh.Reading") * 1000 * J_PER_WH if energy is not None else None
    return NodeReading(_watts(watts, "PowerWatts.Reading"), energy_j)


_DCMI_RE = re.compile(r"Instantaneous power reading\s*:\s*([0-9]+(?:\.[0-9]+)?)\s*Watts", re.I)
_DCMI_OFF = re.compile(r"Power reading state is\s*:\s*deactivated", re.I)


def dcmi_power(text: str) -> NodeReading:
    """``ipmitool dcmi power reading``'s output: the instantaneous reading."""
    if _DCMI_OFF.search(text):
        raise SensorError("the BMC's DCMI power reading is deactivated")
    m = _DCMI_RE.search(text)
    if m is None:
        first = text.strip().splitlines()[0] if text.strip() else "nothing"
        raise SensorError(f"no DCMI power reading in ipmitool's answer: {first[:80]}")
    return NodeReading(_watts(float(m.group(1)), "DCMI power reading"))


def shelly_switch(body: Any) -> NodeReading:
    """Shelly Gen2 ``Switch.GetStatus``: ``apower`` W and ``aenergy.total`` Wh."""
    watts = _get(body, "apower")
    if watts is None:
        raise SensorError("Shelly Switch.GetStatus has no apower (a switch without metering?)")
    total = _get(body, "aenergy", "total")
    energy_j = _watts(total, "aenergy.total") * J_PER_WH if total is not None else None
    return NodeReading(_watts(watts, "apower"), energy_j)


def tasmota_status8(body: Any) -> NodeReading:
    """Tasmota ``Status 8``: ``StatusSNS.ENERGY.Power`` W and ``.Total`` kWh."""
    energy = _get(body, "StatusSNS", "ENERGY")
    if not isinstance(energy, dict) or "Power" not in energy:
        raise SensorError("Tasmota Status 8 has no StatusSNS.ENERGY.Power (no energy sensor?)")
    power = energy["Power"]
    if isinstance(power, list):  # a device with several channels gives one per channel
        watts = sum(_watts(p, "ENERGY.Power") for p in power)
    else:
        watts = _watts(power, "ENERGY.Power")
    total = energy.get("Total")
    energy_j = _watts(total, "ENERGY.Total") * 1000 * J_PER_WH if total is not None else None
    return NodeReading(watts, energy_j)


def json_path(body: Any, path: str) -> NodeReading:
    """The one number ``path`` (JSONPath, jsonpath-ng's extended dialect) selects, in watts.

    Raises:
        SensorError: The path is not valid JSONPath, or selects no number or several.
    """
    matches = [m.value for m in compile_path(path).find(body)]
    if len(matches) != 1:
        raise SensorError(f"JSONPath {path} selects {len(matches)} values, not one number")
    return NodeReading(_watts(matches[0], f"JSONPath {path}"))


def compile_path(path: str) -> Any:
    """A compiled JSONPath (jsonpath-ng, lazy), or SensorError with the parser's reason."""
    try:
        from jsonpath_ng.ext.parser import parse
    except ImportError as exc:  # pragma: no cover - an optional extra
        raise SensorError("a JSON node meter needs jsonpath-ng: pip install 'greenml[node]'") from (
            exc
        )
    try:
        return parse(path)
    except Exception as exc:  # jsonpath-ng raises its own and Python's errors
        raise SensorError(f"not a JSONPath: {path!r} ({exc})") from None
