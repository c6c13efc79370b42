"""Inside the Meter: what a window reads at its edges, and one device's energy over it.

Internal to :mod:`greenml.measure` (the Meter is the public face): the records a
window keeps (:class:`Edges`, :class:`WindowStart`), what the Meter keeps per
device (:class:`Channel`), and the two ways a device's energy is obtained when
it has no energy counter: from its usage counters through its model
(:func:`usage_energy`), or from its sampled power (:func:`sampled_energy`). Each
comes in two steps: what it takes of the device's timeline when the window ends
(``*_facts``, a few bisections), and the figure derived from that when first read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.measure.measurement import POWER_INTEGRATED, DeviceEnergy, EnergyPart, Measurement
from greenml.measure.sensors.base import Device
from greenml.measure.timeline import (
    PartsJ,
    PowerTimeline,
    Usage,
    UsageAnchors,
    UsageTimeline,
    power_between,
)


@dataclass(slots=True)
class Edges:
    """What the Meter reads at a window boundary, per device key."""

    counters: dict[str, float]  # energy counters (J)
    usage: dict[str, Usage]  # usage counters of modelled devices
    powers: dict[str, float]  # power of sampled devices (W)


class WindowStart:
    """When and what a window began with.

    ``pinned_j`` and ``pinned_usage`` are fixed once a sample after ``mono_s``
    exists; with them the window no longer needs the samples before its start.
    pinned_j: the power timeline's value at the start (start_offset with a
    reading, else energy_at); pinned_usage: the usage timeline's start_offset.
    (A slotted class, not a dataclass: one is made at every window's start.)
    """

    __slots__ = ("edges", "mono_s", "pinned_j", "pinned_usage", "wall_s")

    def __init__(self, mono_s: float, wall_s: float, edges: Edges) -> None:
        self.mono_s = mono_s
        self.wall_s = wall_s
        self.edges = edges
        self.pinned_j: dict[str, float] = {}
        self.pinned_usage: dict[str, PartsJ] = {}


class Channel:
    """What the Meter keeps per device: its timelines and its gaps."""

    __slots__ = ("device", "gap_start", "gaps", "timeline", "usage")

    def __init__(self, device: Device, usage: UsageTimeline | None = None) -> None:
        self.device = device
        self.timeline = PowerTimeline()
        self.usage = usage  # modelled devices: the usage readings of the sampler
        self.gaps: list[tuple[float, float]] = []  # closed intervals without data
        self.gap_start: float | None = None  # an open gap began here

    def gap_seconds(self, start: float, end: float) -> float:
        """Seconds of [start, end] not covered by readings of this device."""
        if not self.gaps and self.gap_start is None:
            return 0.0
        spans = list(self.gaps)
        if self.gap_start is not None:
            spans.append((self.gap_start, end))
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in spans)


UsageFacts = tuple[UsageAnchors | None, PartsJ | None]
"""What a modelled device's energy takes of its usage timeline at a window's end:
its :meth:`~UsageTimeline.anchors` and the start's pin (see :class:`WindowStart`)."""
SampledFacts = tuple[float | None, float]
"""A sampled device's joules over a window (``None``: not one reading) and its gap seconds."""


def usage_energy(
    channel: Channel, facts: UsageFacts, begin: WindowStart, start: Usage, end_mono: float,
    end: Usage,
) -> DeviceEnergy:
    """A modelled device's energy from its usage counters, read at both edges."""
    device, usage = channel.device, channel.usage
    assert usage is not None
    anchors, pinned = facts
    joules = usage.combine(anchors, begin.mono_s, start, max(end_mono, begin.mono_s), end, pinned)
    parts = None
    if device.parts:
        parts = {
            name: EnergyPart(j, label)
            for (name, label), j in zip(device.parts, joules[1:], strict=True)
        }
    return DeviceEnergy(
        joules[0], device.method, device.uncertainty_rel, device.name, "", parts
    )


def sampled_facts(
    channel: Channel, begin: WindowStart, end: float, duration: float, edges: Edges
) -> SampledFacts:
    """A device's energy from its power timeline, taken when the window ends (a few
    bisections: the timeline may be trimmed after); :func:`sampled_energy` labels it."""
    if duration == 0:
        return 0.0, 0.0
    line = channel.timeline
    key = channel.device.key
    start_w, end_w = begin.edges.powers.get(key), edges.powers.get(key)
    if start_w is not None and end_w is not None:  # the window's own readings at its edges
        start = begin.mono_s  # line.between_readings, one call less: this runs at every window
        energy = power_between(
            line.anchors(start, end), start, start_w, end, end_w, begin.pinned_j.get(key)
        )
    else:
        if not len(line):
            return None, 0.0
        covered_end = end
        if channel.gap_start is not None and line.last_time_s is not None:
            covered_end = min(
                end, max(begin.mono_s, line.last_time_s)
            )  # no extrapolation into a gap
        energy_j = line.energy_at(covered_end)
        start_j = line.energy_at(begin.mono_s)
        # Read after it: forget_before pins before it trims, so a trim that made
        # start_j stale has left its pin here (the same value, kept).
        start_j = begin.pinned_j.get(key, start_j)
        energy = energy_j - start_j if covered_end > begin.mono_s else 0.0
    if not channel.gaps and channel.gap_start is None:
        return energy, 0.0
    return energy, channel.gap_seconds(begin.mono_s, end)


def sampled_energy(
    device: Device, facts: SampledFacts, duration: float, period_s: float
) -> DeviceEnergy:
    """Energy of a device without both counter readings: from its power timeline."""
    if device.has_counter:
        method, note = POWER_INTEGRATED, "energy counter unreadable; sampled power integrated"
    elif device.usage:
        method, note = device.method, "usage counters unreadable; sampled power integrated"
    else:
        method, note = device.method, ""
    if duration == 0:
        return DeviceEnergy(0.0, method, device.uncertainty_rel, device.name, note)
    energy, gap = facts
    if energy is None:
        return DeviceEnergy(0.0, method, 1.0, device.name, "no power reading in this window")
    # A reading stands for its neighbourhood: over a window only a few sample
    # periods long, the unknown power between readings dominates the error.
    sampling = min(1.0, 0.5 * period_s / duration)
    uncertainty = math.hypot(device.uncertainty_rel, sampling)
    if gap > 0:
        uncertainty += gap / duration
        note = f"{note + '; ' if note else ''}no readings for {gap:.1f} s of {duration:.1f} s"
    return DeviceEnergy(energy, method, min(uncertainty, 1.0), device.name, note)


def pin_window_starts(channel: Channel, begins: Sequence[WindowStart], cut: float) -> float:
    """Pin each open window's energy at its start once it is final; return how far back
    the channel's samples must still be kept (``cut``, or an unpinnable window's start)."""
    key, line, usage = channel.device.key, channel.timeline, channel.usage
    for begin in begins:
        if key not in begin.pinned_j:
            last = line.last_time_s
            if last is not None and last > begin.mono_s:  # energy at the start is final
                start_w = begin.edges.powers.get(key)
                pin = None if start_w is None else line.start_offset(begin.mono_s, start_w)
                begin.pinned_j[key] = line.energy_at(begin.mono_s) if pin is None else pin
            else:
                cut = min(cut, begin.mono_s)
        start_u = begin.edges.usage.get(key)
        if usage is not None and start_u is not None and key not in begin.pinned_usage:
            offset = usage.start_offset(begin.mono_s, start_u)
            if offset is not None:
                begin.pinned_usage[key] = offset
            else:
                cut = min(cut, begin.mono_s)
    return cut


class WindowHandle:
    """What ``with meter.window(name) as w`` gives; ``w.measurement`` after the block."""

    __slots__ = ("measurement", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.measurement: Measurement | None = None
