"""A one-way channel from a measured program to ``greenml run``: JSON lines in a file.

``greenml run`` sets ``GREENML_EVENTS`` to a fresh file for its child. In the
child, :func:`emit` appends one JSON line per event with a single ``os.write``
on an ``O_APPEND`` descriptor: on Linux such a write (< 4 KB) is atomic, so
several ranks and processes may write to the same file without torn lines.
Without the variable, :func:`emit` does nothing; it never raises.

In-process listeners (:func:`add_listener`: an open ``greenml.Run``) receive the
same event dicts, so ``greenml.progress()`` and published windows reach a run
measured in the same process without any file.

Every event carries ``kind``, ``t`` (Unix time, s), ``rank`` and ``pid``. Every
text in an event, keys included, is valid UTF-8: what is not (a file name read
from disk, ``os.fsdecode(b"shard-\\xff.bin")``) is written as ``\\xff`` escapes,
as command arguments are, when emitted and again when read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement

ENV_VAR = "GREENML_EVENTS"
MAX_LINE_BYTES = 4000  # below PIPE_BUF-sized writes: one write, one line
log = logging.getLogger("greenml")

_fd: int | None = None
_fd_key: tuple[str, int] | None = None  # (path, pid) the descriptor was opened for
_failed: set[str] = set()
_refused: set[str] = set()
_listeners: list[Callable[[dict[str, Any]], None]] = []


def add_listener(listener: Callable[[dict[str, Any]], None]) -> None:
    """Hand every event of this process to ``listener`` too (an in-process run)."""
    _listeners.append(listener)


def remove_listener(listener: Callable[[dict[str, Any]], None]) -> None:
    """Stop handing events to ``listener`` (no error when it was not added)."""
    with contextlib.suppress(ValueError):
        _listeners.remove(listener)


def current_rank() -> int:
    """This process's rank: ``RANK`` (torch.distributed), else ``SLURM_PROCID``, else 0."""
    for var in ("RANK", "SLURM_PROCID"):
        value = os.environ.get(var)
        if value:
            try:
                return int(value)
            except ValueError:
                continue
    return 0


def enabled() -> bool:
    """Whether events go anywhere (``GREENML_EVENTS`` is set, or a listener is added)."""
    return bool(os.environ.get(ENV_VAR)) or bool(_listeners)


def emit(kind: str, **fields: Any) -> None:
    """Append one event line; a no-op without ``GREENML_EVENTS``; never raises."""
    path = os.environ.get(ENV_VAR)
    if not path and not _listeners:
        return
    try:
        event = {"kind": kind, "t": time.time(), "rank": current_rank(), "pid": os.getpid()}
        event.update(escaped(fields))
        for listener in tuple(_listeners):
            listener(event)
        if not path:
            return
        data = (json.dumps(event, default=str, separators=(",", ":")) + "\n").encode()
        if len(data) > MAX_LINE_BYTES:
            small = {k: event[k] for k in ("kind", "t", "rank", "pid")}
            small["error"] = f"event too large ({len(data)} bytes), fields dropped"
            data = (json.dumps(small) + "\n").encode()
        os.write(_descriptor(path), data)
    except Exception as exc:  # the user's program must never notice
        where = path or "the in-process run"
        if where not in _failed:
            _failed.add(where)
            log.warning("greenml: events to %s are lost: %s", where, exc)


def escaped_text(text: str) -> str:
    """``text`` as valid UTF-8: bytes Python carries as surrogates become ``\\xff`` escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that no byte stands for (``\\ud800``)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def escaped(value: Any) -> Any:
    """``value`` with every text in it, dict keys included, made valid UTF-8."""
    if isinstance(value, str):
        return escaped_text(value)
    if isinstance(value, dict):
        return {escaped(k): escaped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escaped(v) for v in value]
    return value


def _descriptor(path: str) -> int:
    """One O_APPEND descriptor per (path, process); reopened after a fork."""
    global _fd, _fd_key
    key = (path, os.getpid())
    if _fd is None or _fd_key != key:
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        _fd_key = key
    return _fd


def progress(step: float, total: float | None = None, **fields: Any) -> None:
    """Report that ``step`` of ``total`` units of work are done (steps, epochs, samples).

    ``greenml run`` projects the run's total energy, time, carbon and cost from
    these reports. Outside ``greenml run`` this does nothing; it never raises.
    (Public as ``greenml.progress``; it lives here because a module
    ``greenml.progress`` would shadow the function on the package.)
    """
    if not _finite(step, at_least=0.0) or (total is not None and not _finite(total, above=0.0)):
        _refuse_once(
            "progress",
            f"greenml.progress({step!r:.40}, {total!r:.40}) ignored: step must be a finite "
            "number >= 0 and total a finite number > 0",
        )
        return
    emit("progress", step=step, total=total, **fields)


def _finite(value: Any, *, at_least: float | None = None, above: float | None = None) -> bool:
    """A real, finite number (within the bound): what a progress report must carry."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    if not math.isfinite(number):
        return False
    return (at_least is None or number >= at_least) and (above is None or number > above)


def _refuse_once(key: str, message: str) -> None:
    """Warn once per process and kind: a training loop must not flood its log."""
    if key not in _refused:
        _refused.add(key)
        log.warning("%s", message)


class EventReader:
    """Reads the events appended to a file since the last call (the parent's side)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._offset = 0
        self._partial = b""
        self.bad_lines = 0

    def read_new(self) -> list[dict[str, Any]]:
        """The complete lines written since the last call, parsed; bad lines are counted."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except OSError:
            return []
        self._offset += len(chunk)
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # an unfinished last line waits for the next call
        events: list[dict[str, Any]] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                self.bad_lines += 1
                continue
            if isinstance(event, dict) and isinstance(event.get("kind"), str):
                events.append(escaped(event))
            else:
                self.bad_lines += 1
        return events


def window_measurement(event: dict[str, Any]) -> Any:
    """A ``window`` event as a :class:`~greenml.measure.measurement.Measurement`, ``NAME/rankR``.

    Each component becomes one device keyed ``COMPONENT@rankR``.
    """

    rank = int(event.get("rank", 0))
    start = float(event["start_s"])
    duration = max(0.0, float(event["end_s"]) - start)
    components: dict[str, ComponentEnergy] = {}
    for comp, (energy_j, method, unc) in (event.get("components") or {}).items():
        device = DeviceEnergy(float(energy_j), str(method), float(unc), f"rank{rank}")
        components[comp] = ComponentEnergy({f"{comp}@rank{rank}": device})
    started = datetime.fromtimestamp(start, tz=timezone.utc)
    return Measurement(f"{event['name']}/rank{rank}", started, duration, components)


def publish_window(m: Any) -> None:
    """A finished window as a ``window`` event (components: [J, method, uncertainty])."""
    if not enabled():  # outside ``greenml run`` and any Run: nothing to build
        return
    start = m.started_at.timestamp()
    components = {
        name: [c.energy_j, c.method, c.uncertainty_rel] for name, c in m.components.items()
    }
    emit("window", name=m.name, start_s=start, end_s=start + m.duration_s,
         energy_j=m.total_j, components=components)  # fmt: skip
