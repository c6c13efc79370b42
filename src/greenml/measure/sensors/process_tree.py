"""A process and its descendants, followed cheaply between reads (CPU seconds, members).

A descendant that leaves the tree — a daemon that double-forks, ``(cmd &)`` in
a shell, anything whose parent exits first — is re-parented to init (or to a
subreaper) and no parent link leads to it any more. Given a ``marker``, an
environment entry only the command's processes carry (``greenml run`` sets
one), every new process that carries it is followed too, wherever it hangs.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

from greenml.errors import SensorError, SensorUnavailable


@dataclass
class _Tracked:
    proc: Any  # psutil.Process
    ppid: int
    cpu_s: float | None = None  # own + reaped children CPU seconds at the last read


def _environ(pid: int) -> list[bytes]:
    """The ``NAME=VALUE`` entries a process started with; none if unreadable."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return handle.read().split(b"\0")
    except OSError:  # gone, another user's, or no /proc
        return []


def _environ_has(pid: int, marker: bytes) -> bool:
    """Whether ``NAME=VALUE`` (``marker``) is in the environment a process started with."""
    return marker in _environ(pid)


def marked_processes(pid: int, name: str) -> list[int]:
    """The other processes that carry ``pid``'s value of the environment variable ``name``.

    ``greenml run`` gives its command a variable no other process has; the
    processes that still carry it are the command's, wherever they now hang
    (daemons re-parented away). Empty when ``pid`` has no such variable.
    """
    prefix = name.encode() + b"="
    marker = next((e for e in _environ(pid) if e.startswith(prefix)), None)
    if marker is None:
        return []
    return sorted(q for q in _pids() if q != pid and _environ_has(q, marker))


def processes_with(marker: str) -> list[int]:
    """The live processes whose environment carries ``marker`` (``NAME=VALUE``): those of
    a command under ``greenml run``, wherever they hang, even once the command is gone.
    Zombies and other users' processes (unreadable) are not among them."""
    wanted = marker.encode()
    return sorted(q for q in _pids() if _environ_has(q, wanted))


def _pids() -> set[int]:
    """The PIDs of the machine (on Linux a plain listing of /proc, cheaper than psutil)."""
    try:
        return {int(name) for name in os.listdir(b"/proc") if name.isdigit()}
    except OSError:
        return set(psutil.pids())


def started_after(pid: int, pids: set[int], last: int | None = None) -> set[int]:
    """Those of ``pids`` the kernel gave out after ``pid`` (all of them when it cannot say).

    Linux hands PIDs out in increasing order and wraps at ``pid_max``: with the last one
    given (``last``, by default ``ns_last_pid``) at or above ``pid``, the later ones lie
    between the two; below it, the counter wrapped since, and they lie above ``pid`` or up
    to ``last``. Only a process started after the command can carry its marker, so the
    others' environments need no reading.
    """
    if last is None:
        try:
            with open("/proc/sys/kernel/ns_last_pid", "rb") as handle:
                last = int(handle.read())
        except (OSError, ValueError):
            return pids
    if last >= pid:
        return {q for q in pids if pid < q <= last}
    return {q for q in pids if q > pid or q <= last}


def _just_started(proc: Any, within_s: float = 1.0) -> bool:
    """Whether ``proc`` started less than ``within_s`` ago (a command ``greenml run`` just
    started): too little time for the PID counter to wrap twice since, which
    :func:`started_after` needs."""
    try:
        return bool(time.time() - proc.create_time() < within_s)
    except psutil.Error:
        return False


class ProcessTree:
    """A process and its descendants, followed cheaply between reads.

    The tree is scanned once; after that only PIDs that appeared since the
    previous scan (at most one per ``RESCAN_S``) are examined. CPU time is
    ``user + system`` of each live member plus the time of its reaped children
    (``children_user/system``): children that exited between two reads are
    counted once, and a child found late is counted in full when found.
    A member is assumed reaped by the parent it had when found: a parent's
    exit reparents its children, and a gone parent means nothing to subtract.

    Args:
        pid: The root; the current process by default.
        marker: ``NAME=VALUE``: new processes whose environment has it join the
            tree whoever their parent is (descendants that left the tree).
    """

    RESCAN_S = 1.0

    def __init__(self, pid: int | None = None, marker: str | None = None) -> None:
        root_pid = os.getpid() if pid is None else pid
        self._marker = marker.encode() if marker else None
        self.exited = False  # every member has exited: the CPU seconds are final
        try:
            root = psutil.Process(root_pid)
            members = [root, *root.children(recursive=True)]
        except psutil.Error as exc:
            raise SensorUnavailable(f"cannot follow process {root_pid}: {exc}") from None
        self.pid = root_pid
        self._known_pids = _pids()
        self._discovered_at = time.monotonic()
        self._members: dict[int, _Tracked] = {}
        for proc in members:
            try:
                self._members[proc.pid] = _Tracked(proc, proc.ppid())
            except psutil.Error:
                continue
        if self._marker is not None:  # some may have left the tree already
            others = self._known_pids - self._members.keys()
            if _just_started(root) and root_pid in self._known_pids:  # this namespace's /proc
                others = started_after(root_pid, others)  # the counter cannot have wrapped twice
            for pid in others:
                if _environ_has(pid, self._marker):
                    with contextlib.suppress(psutil.Error):
                        proc = psutil.Process(pid)
                        self._members[pid] = _Tracked(proc, proc.ppid())
        self._cpu_s = 0.0  # may dip for a moment when a parent reaps late
        self._pending_s = 0.0  # adjustments from members dropped by members()
        self._cpu_reported = 0.0
        try:
            self.cpu_seconds()  # baseline: time spent before construction is not counted
        except SensorError as exc:
            raise SensorUnavailable(str(exc)) from None
        self._cpu_s = self._cpu_reported = 0.0

    def _discover(self) -> None:
        now = time.monotonic()
        if now - self._discovered_at < self.RESCAN_S:
            return
        self._discovered_at = now
        pids = _pids()
        new = pids - self._known_pids
        self._known_pids = pids
        pending: dict[int, _Tracked] = {}
        for pid in new:
            try:
                proc = psutil.Process(pid)
                pending[pid] = _Tracked(proc, proc.ppid())
            except psutil.Error:
                continue
        self._adopt_children(pending)
        if self._marker is not None and pending:  # descendants that left the tree (daemons)
            for pid in [pid for pid in pending if _environ_has(pid, self._marker)]:
                self._members[pid] = pending.pop(pid)
            self._adopt_children(pending)  # their own children, marker or not

    def _adopt_children(self, pending: dict[int, _Tracked]) -> None:
        """Move the pending processes whose parent is a member into the tree."""
        added = True
        while added:  # parents before children, whatever the PID order
            added = False
            for pid, tracked in list(pending.items()):
                if tracked.ppid in self._members:
                    self._members[pid] = pending.pop(pid)
                    added = True

    def _drop(self, gone: list[int]) -> None:
        """Forget exited members; time a tracked parent reaped is in its children_*."""
        for pid in gone:
            t = self._members[pid]
            if t.cpu_s is not None and t.ppid in self._members:
                self._pending_s -= t.cpu_s
        for pid in gone:
            del self._members[pid]

    def members(self) -> list[Any]:
        """The live psutil.Process objects of the tree (new descendants included)."""
        self._discover()
        self._drop([pid for pid in self._members if pid not in self._known_pids])
        return [t.proc for t in self._members.values()]

    def cpu_seconds(self) -> float:
        """Cumulative CPU seconds of the tree since construction (never decreases).

        Raises:
            SensorError: The whole tree has exited.
        """
        self._discover()
        delta = 0.0
        gone: list[int] = []
        for pid, t in self._members.items():
            try:
                ct = t.proc.cpu_times()
            except psutil.NoSuchProcess:
                gone.append(pid)
                continue
            except psutil.Error:
                continue  # access denied: skip this member this time
            total = ct.user + ct.system + ct.children_user + ct.children_system
            delta += total if t.cpu_s is None else total - t.cpu_s
            t.cpu_s = total
        self._drop(gone)
        if not self._members:
            self.exited = True
            raise SensorError(f"process {self.pid} and its children have exited")
        self._cpu_s += delta + self._pending_s
        self._pending_s = 0.0
        self._cpu_reported = max(self._cpu_reported, self._cpu_s)
        return self._cpu_reported

    @property
    def last_cpu_seconds(self) -> float:
        """What :meth:`cpu_seconds` last returned (final once :attr:`exited`)."""
        return self._cpu_reported
