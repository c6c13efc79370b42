"""Talk to the node agent: find its socket and the job's token, send requests, read answers.

The socket is ``$GREENML_AGENT_SOCKET``, else ``[agent] socket`` of the config
file, else ``/run/greenml/agent.sock``; ``off`` turns the agent off for this
user. The job token is ``$GREENML_AGENT_TOKEN``, else the file
``$GREENML_AGENT_TOKEN_FILE``, else, inside a Slurm job, the file the prolog
wrote (``$GREENML_AGENT_TOKEN_DIR``, by default ``/run/greenml/jobs``, then
``$SLURM_JOB_ID.token``).
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from pathlib import Path
from typing import Any

from greenml.agent.protocol import parse_answer, request_line
from greenml.agent.socket_path import agent_present, agent_socket
from greenml.errors import AgentError

TOKEN_ENV = "GREENML_AGENT_TOKEN"
TOKEN_FILE_ENV = "GREENML_AGENT_TOKEN_FILE"
TOKEN_DIR = Path("/run/greenml/jobs")
TOKEN_DIR_ENV = "GREENML_AGENT_TOKEN_DIR"
_MAX_ANSWER = 1 << 20


def job_token() -> str | None:
    """This job's agent token, if it has one (see the module docstring)."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if token:
        return token
    path = os.environ.get(TOKEN_FILE_ENV, "").strip()
    job = os.environ.get("SLURM_JOB_ID", "").strip()
    if not path and job.isdigit():
        path = str(Path(os.environ.get(TOKEN_DIR_ENV) or TOKEN_DIR) / f"{job}.token")
    if path:
        try:
            return Path(path).read_text().strip() or None
        except OSError:
            return None
    return None


class AgentClient:
    """One connection to the agent; requests are answered in order (thread-safe).

    Args:
        path: The socket (default :func:`agent_socket`).
        token: The job token (default :func:`job_token`).
        timeout_s: How long to wait for an answer.

    Raises:
        AgentError: No agent listens there.
    """

    def __init__(
        self, path: str | Path | None = None, token: str | None = None, timeout_s: float = 10.0
    ) -> None:
        found = Path(path) if path is not None else agent_socket()
        if found is None:
            raise AgentError("the greenml agent is turned off (GREENML_AGENT_SOCKET=off)")
        self.path = found
        self.token = token if token is not None else job_token()
        self._lock = threading.Lock()
        self._id = 0
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # The kernel's timeouts, on a blocking socket: Python's own (settimeout) would poll
        # before every read, which doubles the cost of a counter read.
        wait = struct.pack("ll", int(timeout_s), int(timeout_s % 1 * 1e6))
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, wait)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, wait)
        try:
            self._sock.connect(str(found))
        except OSError as exc:
            self._sock.close()
            raise AgentError(f"no greenml agent at {found}: {exc.strerror or exc}") from None
        self._rfile = self._sock.makefile("rb")

    def request(self, op: str, **args: Any) -> dict[str, Any]:
        """The result of ``op``.

        Raises:
            AgentRefused: The agent refused (its reason; ``code`` says the kind).
            AgentError: The connection broke.
        """
        with self._lock:
            self._id += 1
            return self._exchange(request_line(op, args, self._id, self.token), self._id)

    def request_line(self, line: bytes) -> dict[str, Any]:
        """The result of a request line built once, without an id (answers come in order).

        Raises:
            AgentRefused: The agent refused.
            AgentError: The connection broke.
        """
        with self._lock:
            return self._exchange(line, None)

    def _exchange(self, line: bytes, request_id: int | None) -> dict[str, Any]:
        where = f"the greenml agent at {self.path}"
        try:
            self._sock.sendall(line)
            answer = self._rfile.readline(_MAX_ANSWER)
        except OSError as exc:
            raise AgentError(f"{where} did not answer: {exc}") from None
        if not answer:
            raise AgentError(f"{where} closed the connection")
        return parse_answer(answer, request_id)

    def close(self) -> None:
        """Close the connection (the agent undoes the changes it held)."""
        try:
            self._rfile.close()
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def use_agent_for_control() -> Path | None:
    """The agent's socket when GPU changes should go through it: not root, and one is there."""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return None
    return agent_present()

