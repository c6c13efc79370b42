"""A window's figures, derived from its readings when first asked for.

When a window ends, the Meter keeps what it read at both edges (the raw readings,
never skipped nor cached) and, of the devices whose energy also rests on the
sampler's timelines, the little the energy takes of them (see ``*_facts`` in
:mod:`greenml.measure.window_energy`): a few bisections, as the timelines may be
appended to or trimmed after. Everything else (each device's energy, uncertainty
and note, the per-component breakdowns, ``started_at``) is derived from that by
:meth:`WindowPlan.figures` when the :class:`~greenml.measure.measurement.Measurement`
is first read, with the arithmetic the Meter would have done at once: the same values.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from greenml.measure.measurement import (
    NODE,
    ComponentEnergy,
    DeviceEnergy,
    Measurement,
    deferred,
)
from greenml.measure.sensors.nvml_bands import short_window_note
from greenml.measure.slow_counters import edge_uncertainty_rel
from greenml.measure.window_energy import (
    Channel,
    Edges,
    WindowStart,
    sampled_energy,
    sampled_facts,
    usage_energy,
)

WindowReading = tuple[WindowStart, float, Edges, dict[str, Any]]
"""What a window read: its start, its end (monotonic s), the end's edges, and the facts
taken of the timelines (by device key; ``*_facts`` in :mod:`greenml.measure.window_energy`)."""

_COUNTER, _USAGE, _SAMPLED = 0, 1, 2  # how a device's energy is had, failures aside


class WindowPlan:
    """What a Meter's windows take and derive per device, looked up once.

    Args:
        channels: The Meter's channels, by device key.
        slow_keys: Devices whose counter edges come from a reader thread
            (:mod:`greenml.measure.slow_counters`).
        period_s: The sampler's period (``inf``: no sampler).
    """

    def __init__(self, channels: dict[str, Channel], slow_keys: Iterable[str],
                 period_s: float) -> None:  # fmt: skip
        self._plan = [(key, ch, ch.device, ch.device.component, _kind(ch)) for key, ch in
                      channels.items()]  # fmt: skip
        self.components = list(dict.fromkeys(component for _, _, _, component, _ in self._plan))
        self._counted = [(key, ch) for key, ch, _, _, kind in self._plan if kind == _COUNTER]
        self._counter_keys = frozenset(key for key, _ in self._counted)
        self._timed = [  # (key, channel, its usage timeline if its energy is modelled)
            (key, ch, ch.usage if kind == _USAGE else None)
            for key, ch, _, _, kind in self._plan
            if kind != _COUNTER
        ]
        self.slow_keys = frozenset(slow_keys)
        self.period_s = period_s
        self._figures = self.figures  # bound once: close runs at every window

    def close(self, name: str, begin: WindowStart, end_mono: float, edges: Edges) -> Measurement:
        """The Measurement of a window ending now: its timeline facts taken, the rest deferred."""
        start = begin.mono_s
        end = end_mono if end_mono > start else start
        duration = end - start  # max(0.0, end_mono - start), without the call
        facts: dict[str, Any] = {}
        keys = self._counter_keys
        start_c, end_c = begin.edges.counters, edges.counters
        if not (start_c.keys() >= keys and end_c.keys() >= keys):  # a counter unreadable
            for key, ch in self._counted:
                if key not in start_c or key not in end_c:
                    facts[key] = sampled_facts(ch, begin, end_mono, duration, edges)
        start_u, end_u = begin.edges.usage, edges.usage
        for key, ch, usage in self._timed:
            if usage is not None and key in start_u and key in end_u:  # its anchors and pin
                facts[key] = (usage.anchors(start, end), begin.pinned_usage.get(key))
            else:
                facts[key] = sampled_facts(ch, begin, end_mono, duration, edges)
        return deferred(name, duration, self._figures, (begin, end_mono, edges, facts))

    def figures(
        self, reading: WindowReading
    ) -> tuple[datetime, dict[str, ComponentEnergy], ComponentEnergy | None]:
        """``started_at``, ``components`` and ``node`` of a window from what it read."""
        begin, end_mono, edges, facts = reading
        duration = max(0.0, end_mono - begin.mono_s)
        per_component: dict[str, dict[str, DeviceEnergy]] = {c: {} for c in self.components}
        start_c, end_c = begin.edges.counters, edges.counters
        start_u, end_u = begin.edges.usage, edges.usage
        for key, channel, device, component, kind in self._plan:
            if kind == _COUNTER and key not in facts:  # both counter readings
                rel, note = device.uncertainty_rel, ""
                period = device.counter_period_s
                if key in self.slow_keys or (period and duration < 10 * period):
                    rel = edge_uncertainty_rel(rel, duration)  # the counter's steps
                    note = short_window_note(duration, period) if period else ""
                energy = DeviceEnergy(end_c[key] - start_c[key], device.method, rel, device.name,
                                      note)  # fmt: skip
            elif kind == _USAGE and key in start_u and key in end_u:
                energy = usage_energy(
                    channel, facts[key], begin, start_u[key], end_mono, end_u[key]
                )
            else:
                energy = sampled_energy(device, facts[key], duration, self.period_s)
            per_component[component][key] = energy
        started = datetime.fromtimestamp(begin.wall_s, tz=timezone.utc)
        node = per_component.pop(NODE, None)  # ground truth beside the components
        components = {c: ComponentEnergy(devices) for c, devices in per_component.items()}
        return started, components, ComponentEnergy(node) if node else None


def _kind(channel: Channel) -> int:
    if channel.device.has_counter:
        return _COUNTER
    return _USAGE if channel.usage is not None else _SAMPLED
