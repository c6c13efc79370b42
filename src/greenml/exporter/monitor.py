"""``greenml monitor``: a live terminal table of every GPU and the CPU, with waste flags.

Lazy imports: rich's table, console and live display, when the monitor draws.
"""

from __future__ import annotations

import io
import threading
from typing import Any

from greenml.exporter.state import DeviceState, LiveState, Snapshot
from greenml.measure.meter import Meter

GIB = 1024**3
IDLE_BELOW = 0.01  # activity at or below this is "idle"
LOW_SM_BELOW = 0.15
MEMORY_HELD_BYTES = 1 * GIB


def waste_flags(device: DeviceState) -> list[str]:
    """Waste flags of one device: idle holding memory, low SM activity, utilization only."""
    if device.component != "gpu":
        return []
    flags = []
    activity = device.sm_activity if device.sm_activity is not None else device.utilization
    memory = device.memory_used_bytes or 0.0
    if activity is not None and activity <= IDLE_BELOW and memory > MEMORY_HELD_BYTES:
        flags.append("idle, holding memory")
    elif device.sm_activity is not None and device.sm_activity < LOW_SM_BELOW:
        flags.append("low SM activity")
    if device.sm_activity is None and device.utilization is not None:
        flags.append("utilization only (no SM activity)")
    return flags


def render_frame(snapshot: Snapshot) -> Any:
    """A rich Table of one snapshot."""
    from rich.table import Table

    table = Table(title=f"greenml monitor — {snapshot.duration_s:.0f} s", title_justify="left")
    for column in ("device", "model", "power W", "util", "SM act", "memory GiB", "energy kJ"):
        table.add_column(column, justify="left" if column in ("device", "model") else "right")
    table.add_column("flags", style="yellow")
    for d in snapshot.devices:
        table.add_row(
            d.key,
            d.name,
            _num(d.power_w, "{:.0f}"),
            _pct(d.utilization),
            _pct(d.sm_activity),
            _num(None if d.memory_used_bytes is None else d.memory_used_bytes / GIB, "{:.1f}"),
            f"{d.energy_j / 1000:.2f}",
            ", ".join(waste_flags(d)),
        )
    total_w = sum(d.power_w or 0.0 for d in snapshot.devices)
    total_kj = sum(d.energy_j for d in snapshot.devices) / 1000
    table.add_section()
    table.add_row("total", "", f"{total_w:.0f}", "", "", "", f"{total_kj:.2f}", "")
    if snapshot.notes:
        table.caption = "; ".join(snapshot.notes)
    return table


def frame_text(snapshot: Snapshot, width: int = 140) -> str:
    """One frame as plain text (for tests and logs)."""
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(render_frame(snapshot))
    return out.getvalue()


def run_monitor(
    meter: Meter,
    interval_s: float = 1.0,
    frames: int | None = None,
    console: Any = None,
    stop: threading.Event | None = None,
) -> int:
    """Sample ``meter`` every ``interval_s`` and redraw; ``frames`` bounds the redraws.

    Returns the number of frames drawn. Ctrl-C ends it quietly.
    """
    from rich.live import Live

    state = LiveState(meter)
    stop = stop or threading.Event()
    drawn = 0
    try:
        with Live(render_frame(state.snapshot), console=console, auto_refresh=False) as live:
            while frames is None or drawn < frames:
                if drawn and stop.wait(interval_s):
                    break
                meter.sample_now()
                live.update(render_frame(state.update()), refresh=True)
                drawn += 1
    except KeyboardInterrupt:
        pass
    return drawn


def _num(value: float | None, fmt: str) -> str:
    return "—" if value is None else fmt.format(value)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"
