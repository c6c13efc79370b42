"""Processes a command started that are still running when it ends: said, not dropped.

``greenml run`` measures the command until the command itself exits. A
descendant left running (``cmd &`` and exit, a daemon) goes on using energy
that the run does not count; the run's notes say how many there were.
"""

from __future__ import annotations

import os


def outliving(marker: str) -> list[int]:
    """The processes still running that carry the command's ``marker`` (``NAME=VALUE``,
    see :class:`~greenml.measure.sensors.process_tree.ProcessTree`); never raises."""
    try:
        from greenml.measure.sensors.process_tree import processes_with

        return [pid for pid in processes_with(marker) if pid != os.getpid()]
    except Exception:  # no /proc, a race with an exit: nothing known, nothing said
        return []


def outlived_note(pids: list[int]) -> str | None:
    """The run's note about ``pids`` (``None`` when none outlived the command)."""
    if not pids:
        return None
    shown = ", ".join(map(str, pids[:5])) + (" ..." if len(pids) > 5 else "")
    what, its = ("process", "its") if len(pids) == 1 else ("processes", "their")
    return (f"{len(pids)} {what} started by the command (pid {shown}) still ran when it "
            f"ended: {its} energy after the command ended is not counted")  # fmt: skip
