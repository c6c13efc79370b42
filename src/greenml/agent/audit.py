"""The agent's audit log: one JSON line per change, refusal of a change, and restore.

Each line says who (uid, user name, pid, job), which GPU (ordinal, UUID, name),
what (``power_limit`` or ``clocks``), from → to, why (the client's reason, or
the agent's: ``client disconnected``, ``job ended``, ``agent start after a
crash``) and the outcome. The file is root's, mode 0600, appended and flushed
line by line, so a crash loses at most the line being written.
"""

from __future__ import annotations

import json
import os
import pwd
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Peer:
    """Who is on the other end of a connection, as the kernel says (``SO_PEERCRED``)."""

    pid: int
    uid: int
    gid: int

    @property
    def user(self) -> str:
        try:
            return pwd.getpwuid(self.uid).pw_name
        except KeyError:
            return str(self.uid)


AGENT = Peer(os.getpid(), 0, 0)  # the agent itself, for restores it decides on


class AuditLog:
    """Appends audit entries to ``path`` (created 0600; its folder 0700 when new)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(fd, 0o600)
        self._file = os.fdopen(fd, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(
        self, who: Peer | None, what: str, gpu: dict[str, Any] | None, outcome: str,
        *, job: str | None = None, before: Any = None, after: Any = None, why: str = "",
    ) -> dict[str, Any]:  # fmt: skip
        """Append one entry and return it."""
        entry: dict[str, Any] = {
            "time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            "who": None if who is None else {"uid": who.uid, "user": who.user, "pid": who.pid},
            "job": job,
            "what": what,
            "gpu": gpu,
            "from": before,
            "to": after,
            "why": why,
            "outcome": outcome,
        }
        line = json.dumps(entry, separators=(",", ":"), default=str) + "\n"
        with self._lock:
            self._file.write(line)
            self._file.flush()
            os.fsync(self._file.fileno())
        return entry

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_audit(path: Path) -> list[dict[str, Any]]:
    """Every entry of an audit log, oldest first (for tests and ``greenml agent status``)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in lines if line.strip()]
