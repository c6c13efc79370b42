"""Start the outside implementations the node-meter tests read: sushy-static, snmpsim."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MOCKUP = Path(__file__).parent / "fixtures" / "redfish-public-rackmount1"


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tool(name: str) -> str:
    """A console script of this venv (or on PATH); missing: skip, or fail under CI=true."""
    here = Path(sys.executable).with_name(name)
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is not installed (make test installs it)")
        pytest.skip(f"{name} is not installed")
    return found


def _wait_tcp(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on {port}")


@contextmanager
def sushy_static(mockup: Path = MOCKUP) -> Iterator[str]:
    """``redfish+http://127.0.0.1:PORT`` served by sushy-tools' static mockup server."""
    port = free_port()
    proc = subprocess.Popen([tool("sushy-static"), "-i", "127.0.0.1", "-p", str(port),
                             "-m", str(mockup)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        _wait_tcp(port, proc)
        yield f"redfish+http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def snmpsim(data_dir: Path, records: dict[str, str]) -> Iterator[int]:
    """snmpsim's command responder serving ``records`` (community → .snmprec text); the UDP port.

    snmpsim refuses to run as root without dropping to a user; as root it is told to
    "drop" to root itself (a user like nobody could not read a pyenv Python under /root).
    """
    import grp
    import pwd

    data = data_dir / "data"
    cache = data_dir / "cache"
    data.mkdir()
    cache.mkdir()
    for community, text in records.items():
        (data / f"{community}.snmprec").write_text(text)
    user = pwd.getpwuid(os.getuid()).pw_name
    group = grp.getgrgid(os.getgid()).gr_name
    port = free_port(socket.SOCK_DGRAM)
    log = data_dir / "snmpsim.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([tool("snmpsim-command-responder"), f"--data-dir={data}",
                                 f"--cache-dir={cache}", f"--agent-udpv4-endpoint=127.0.0.1:{port}",
                                 f"--process-user={user}", f"--process-group={group}"],
                                stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while b"Listening at UDP" not in log.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"snmpsim did not start: {log.read_text()[-500:]}")
            time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
