"""Pausing an interruptible job between its planned chunks (SIGSTOP/SIGCONT).

A :class:`Pauser` follows a plan's chunks for a running process: outside the
chunks the process tree is stopped (``SIGSTOP``, the parent first), at the
next chunk it is continued (``SIGCONT``, the parent last). After the last
chunk the job runs on until it ends: a plan is a forecast, never a reason to
leave a job stopped. A stopped job that was sent a terminating signal
(Ctrl-C, ``kill``) is continued at once, so it can handle it.

Clocks and sleeps are injected: time here is wall-clock Unix seconds, the
time plans are made in.

Lazy imports: psutil (~30 ms) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

from greenml.errors import ConfigError

Clock = Callable[[], float]
Sleep = Callable[[float], None]
Send = Callable[[int, int], None]
_TERMINATING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class PauseSchedule:
    """When an interruptible job may run: its planned chunks, as (start_s, end_s) pairs.

    Raises:
        ConfigError: A chunk that ends before it starts, or chunks that overlap
            or are out of order.
    """

    def __init__(self, chunks: Sequence[tuple[float, float]]) -> None:
        if not chunks:
            raise ConfigError("a plan needs at least one chunk")
        last_end = -float("inf")
        for start, end in chunks:
            if not end > start:
                raise ConfigError(f"chunk ({start}, {end}) ends before it starts")
            if start < last_end:
                raise ConfigError("plan chunks overlap or are out of order")
            last_end = end
        self.chunks = [(float(a), float(b)) for a, b in chunks]

    @property
    def start_s(self) -> float:
        return self.chunks[0][0]

    @property
    def end_s(self) -> float:
        """When the last chunk ends; after it the job is never paused."""
        return self.chunks[-1][1]

    def running_at(self, now_s: float) -> bool:
        """Whether the job should run at ``now_s`` (before, in a chunk, or after the plan)."""
        if now_s < self.start_s or now_s >= self.end_s:
            return True
        return any(a <= now_s < b for a, b in self.chunks)

    def next_change(self, now_s: float) -> float | None:
        """The next time after ``now_s`` when ``running_at`` changes, or None."""
        later = [t for pause in self.pauses() for t in pause if t > now_s]
        return min(later) if later else None

    def pauses(self) -> list[tuple[float, float]]:
        """The planned pauses: the gaps between chunks (empty gaps left out)."""
        return [(b, a) for (_, b), (a, _) in itertools.pairwise(self.chunks) if a > b]


class Pauser:
    """Stops and continues a process tree at a schedule's boundaries.

    Args:
        schedule: The chunks.
        pid: The job's process (its descendants are stopped and continued too).
        clock: Wall-clock Unix seconds.
        send: ``os.kill``-like; a process that is gone is skipped.
        children: The pids of a process's descendants (default: psutil).
        pending: The signals waiting for a stopped process (default: ``/proc``).
    """

    def __init__(
        self,
        schedule: PauseSchedule,
        pid: int,
        *,
        clock: Clock = time.time,
        send: Send = os.kill,
        children: Callable[[int], list[int]] | None = None,
        pending: Callable[[int], set[int]] | None = None,
    ) -> None:
        self.schedule = schedule
        self.pid = pid
        self.paused_since: float | None = None
        self.pauses: list[tuple[float, float]] = []
        self.abandoned: str | None = None
        self._clock = clock
        self._send = send
        self._children = children or descendants
        self._pending = pending or pending_signals

    def poll(self, now_s: float | None = None) -> str | None:
        """Bring the process in line with the schedule; ``"stop"``, ``"cont"`` or None."""
        now = self._clock() if now_s is None else now_s
        if self.paused_since is not None:
            waiting = self._pending(self.pid) & set(_TERMINATING)
            if waiting:
                names = ", ".join(sorted(signal.Signals(s).name for s in waiting))
                self.abandon(f"{names} arrived while paused: resumed so the job can handle it")
                return "cont"
        if self.abandoned is not None:
            return None
        run = self.schedule.running_at(now)
        if run and self.paused_since is not None:
            self._resume(now)
            return "cont"
        if not run and self.paused_since is None:
            self._signal_tree(signal.SIGSTOP)
            self.paused_since = now
            return "stop"
        return None

    def abandon(self, reason: str) -> None:
        """Stop following the schedule; a paused job is continued."""
        self.abandoned = self.abandoned or reason
        if self.paused_since is not None:
            self._resume(self._clock())

    def release(self) -> None:
        """Never leave the job stopped (called when greenml stops watching it)."""
        if self.paused_since is not None:
            self._resume(self._clock())

    @property
    def paused_s(self) -> float:
        return sum(b - a for a, b in self.pauses)

    def summary(self) -> dict[str, Any]:
        """What was carried out: the pauses taken (Unix seconds) and their total."""
        return {
            "planned_pauses": [list(p) for p in self.schedule.pauses()],
            "pauses": [list(p) for p in self.pauses],
            "paused_s": self.paused_s,
            "abandoned": self.abandoned,
        }

    def _resume(self, now: float) -> None:
        self._signal_tree(signal.SIGCONT)
        assert self.paused_since is not None
        self.pauses.append((self.paused_since, now))
        self.paused_since = None

    def _signal_tree(self, signum: int) -> None:
        """Stop the parent first (it forks no more), continue it last."""
        if signum == signal.SIGSTOP:
            self._kill(self.pid, signum)
            for pid in self._children(self.pid):
                self._kill(pid, signum)
        else:
            for pid in reversed(self._children(self.pid)):
                self._kill(pid, signum)
            self._kill(self.pid, signum)

    def _kill(self, pid: int, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):  # ended between listing and signalling
            self._send(pid, signum)


class TickPauser:
    """A :class:`Pauser` driven by ``greenml run``'s tick, for the child it started.

    ``greenml run`` does not hand its child over, so the child is found on the
    first tick: greenml's own oldest child started since ``since_s``.
    """

    def __init__(
        self,
        schedule: PauseSchedule,
        *,
        since_s: float,
        clock: Clock = time.time,
        find: Callable[[float], int | None] | None = None,
    ) -> None:
        self.schedule = schedule
        self.pauser: Pauser | None = None
        self._since_s = since_s
        self._clock = clock
        self._find = find or own_child

    def poll(self) -> None:
        if self.pauser is None:
            pid = self._find(self._since_s)
            if pid is None:
                return
            self.pauser = Pauser(self.schedule, pid, clock=self._clock)
        self.pauser.poll()

    def release(self) -> None:
        if self.pauser is not None:
            self.pauser.release()

    def summary(self) -> dict[str, Any]:
        if self.pauser is not None:
            return self.pauser.summary()
        planned = [list(p) for p in self.schedule.pauses()]
        return {"planned_pauses": planned, "pauses": [], "paused_s": 0.0, "abandoned": None}


def own_child(since_s: float) -> int | None:
    """The oldest child of this process started at or after ``since_s`` (psutil), or None."""
    import psutil

    found = []
    for child in psutil.Process().children():
        try:
            created = child.create_time()
        except psutil.Error:
            continue
        if created >= since_s - 1.0:
            found.append((created, child.pid))
    return min(found)[1] if found else None


def drive(
    proc: Any,
    pauser: Pauser,
    *,
    clock: Clock = time.time,
    sleep: Sleep = time.sleep,
    poll_s: float = 0.05,
) -> int:
    """Follow the schedule until ``proc`` (a ``subprocess.Popen``) ends; its return code.

    The job is never left stopped, even when this is interrupted.
    """
    try:
        while True:
            pauser.poll(clock())
            code = proc.poll()
            if code is not None:
                return int(code)
            now = clock()
            change = pauser.schedule.next_change(now)
            sleep(poll_s if change is None else max(0.0, min(poll_s, change - now)))
    finally:
        pauser.release()


def descendants(pid: int) -> list[int]:
    """The pids under ``pid``, parents before children (empty when it is gone).

    Under ``greenml run``, the command's daemons that left its tree are
    included too (they carry its ``GREENML_EVENTS``): a pause stops them as well.
    """
    import psutil

    from greenml.measure.events import ENV_VAR
    from greenml.measure.sensors.process_tree import marked_processes

    try:
        found = [p.pid for p in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []
    return found + [q for q in marked_processes(pid, ENV_VAR) if q not in found]


def pending_signals(pid: int) -> set[int]:
    """Signals pending for a process (Linux ``/proc``; empty elsewhere or when it is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return set()
    mask = 0
    for line in text.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            mask |= int(line.split(":", 1)[1].strip(), 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}
