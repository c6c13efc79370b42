"""A node for the agent's tests: root-only RAPL files, fake GPUs, the agent as root, real users.

:class:`Node` lays out a temporary folder any user may traverse (``/tmp/greenml-agent-*``,
removed at the end): a fake sysfs whose ``energy_uj`` files are root's, mode 0400 (as
since Linux 5.10), the fake GPUs' files, ``agent.toml``, and each user's HOME. It starts
``greenml agent start`` as root in a subprocess and runs code as a real unprivileged user
(``useradd``, removed at the end) through ``runuser``.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.fakes.fake_sysfs import FakeMachine

REPO = Path(__file__).resolve().parents[2]
PYTHONPATH = f"{REPO}{os.pathsep}{REPO / 'src'}"
FAKE_NVML = "tests.agent.fake_node:nvml"
MAX_UJ = 262_143_328_850


def _others_can_run(path: Path) -> bool:
    real = path.resolve()
    return all(os.stat(p).st_mode & 0o001 for p in [*real.parents, real])


def user_python() -> tuple[str, str]:
    """A Python a new user may run, and what its PYTHONPATH needs beyond the repository.

    This interpreter when its file and folders are open to others; else (a pyenv under a
    0700 /root) the system's Python of the same minor version with this environment's
    site-packages.
    """
    if _others_can_run(Path(sys.executable)):
        return sys.executable, ""
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    return str(system), site


def can_make_users() -> bool:
    return os.geteuid() == 0 and shutil.which("useradd") is not None and bool(
        shutil.which("runuser")
    )


@contextlib.contextmanager
def real_user(prefix: str = "gmlag") -> Iterator[pwd.struct_passwd]:
    """A fresh unprivileged user (no home, no login), deleted afterwards."""
    name = f"{prefix}{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group",
                    name], check=True, capture_output=True)  # fmt: skip
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)


class Node:
    """One test node: its folder, its agent, and running code as its users."""

    def __init__(self, config: str = "", packages_uj: int = 10_000_000) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="greenml-agent-"))
        os.chmod(self.dir, 0o755)
        self.root = self.dir / "root"
        machine = FakeMachine(self.root, vendor="GenuineIntel", model="Intel Xeon Gold 6338")
        self.package = machine.rapl_zone("intel-rapl:0", "package-0", packages_uj, MAX_UJ)
        self.dram = machine.rapl_zone("intel-rapl:0/intel-rapl:0:0", "dram", 1_000_000, MAX_UJ)
        self.psys = machine.rapl_zone("intel-rapl:1", "psys", 50_000_000, MAX_UJ)
        for zone in (self.package, self.dram, self.psys):
            os.chmod(zone / "energy_uj", 0o400)  # root only, as since Linux 5.10
        for path in [self.root, *self.root.rglob("*")]:
            if path.is_dir():
                os.chmod(path, 0o755)
        self.socket = self.dir / "run" / "agent.sock"
        self.state = self.dir / "state"
        self.audit = self.dir / "log" / "audit.jsonl"
        self.limits = self.dir / "gpu_limits.json"
        self.clocks = self.dir / "gpu_clocks.json"
        self.config = self.dir / "agent.toml"
        self.config.write_text(
            f'[agent]\nsocket = "{self.socket}"\nstate_dir = "{self.state}"\n'
            f'audit_log = "{self.audit}"\nsys_root = "{self.root}"\n' + config
        )
        os.chmod(self.config, 0o644)
        self.process: subprocess.Popen[bytes] | None = None

    # -- the agent ---------------------------------------------------------------

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "PYTHONPATH": PYTHONPATH,
            "PYTHONDONTWRITEBYTECODE": "1", "GREENML_FAKE_NVML": FAKE_NVML,
            "GREENML_TEST_FAKE_STATE": str(self.limits),
            "GREENML_TEST_FAKE_CLOCKS": str(self.clocks), "HOME": str(self.dir),
        }  # fmt: skip
        env.update(extra)
        return env

    def start(self, **env: str) -> subprocess.Popen[bytes]:
        """``greenml agent start`` as root; returns once its socket answers."""
        self.socket.unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "greenml", "agent", "start", "--config", str(self.config)],
            env=self.env(**env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not self.socket.is_socket():
            if self.process.poll() is not None:
                out = self.process.stderr.read().decode() if self.process.stderr else ""
                raise AssertionError(f"the agent did not start: {out}")
            if time.monotonic() > deadline:
                raise AssertionError("the agent did not open its socket in 30 s")
            time.sleep(0.05)
        return self.process

    def stop(self, sig: int = signal.SIGTERM) -> str:
        """Stop the agent with ``sig``; its stderr."""
        if self.process is None:
            return ""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            _, err = self.process.communicate(timeout=30)
        finally:
            self.process = None
        return err.decode()

    def gpu_limits(self) -> dict[str, float]:
        """The fake GPUs' limits in force (what NVML would say), by UUID."""
        return json.loads(self.limits.read_text()) if self.limits.exists() else {}

    def audit_entries(self) -> list[dict[str, Any]]:
        from greenml.agent.audit import read_audit

        return read_audit(self.audit)

    def add_energy(self, zone: Path, microjoules: int) -> None:
        path = zone / "energy_uj"
        path.write_text(f"{(int(path.read_text()) + microjoules) % (MAX_UJ + 1)}\n")

    # -- users -------------------------------------------------------------------

    def run_as(
        self, user: pwd.struct_passwd, code: str, timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run Python ``code`` as ``user`` (a real unprivileged process); its result."""
        return self.argv_as(user, ["-c", code], timeout, **env)

    def argv_as(
        self, user: pwd.struct_passwd, argv: list[str], timeout: float = 120, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Run ``python ARGV`` as ``user``; its result."""
        return subprocess.run(self.user_command(user, argv, **env), capture_output=True,
                              text=True, timeout=timeout, cwd=str(self.dir))  # fmt: skip

    def user_command(self, user: pwd.struct_passwd, argv: list[str], **env: str) -> list[str]:
        """The command line that runs ``python ARGV`` as ``user`` in a clean environment."""
        home = self.dir / f"home-{user.pw_name}"
        home.mkdir(exist_ok=True)
        os.chown(home, user.pw_uid, user.pw_gid)
        python, site = user_python()
        variables = self.env(HOME=str(home), GREENML_AGENT_SOCKET=str(self.socket),
                             GREENML_SYS_ROOT=str(self.root), **env)  # fmt: skip
        if site:
            variables["PYTHONPATH"] = f"{variables['PYTHONPATH']}{os.pathsep}{site}"
        return ["runuser", "-u", user.pw_name, "--", "env", "-i",
                *(f"{k}={v}" for k, v in variables.items()), python, *argv]  # fmt: skip

    def cli_as(
        self, user: pwd.struct_passwd, *args: str, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return self.argv_as(user, ["-m", "greenml", *args], **env)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``greenml ARGS`` as root (the prolog, the epilog)."""
        return subprocess.run([sys.executable, "-m", "greenml", *args], capture_output=True,
                              text=True, env=self.env(GREENML_AGENT_SOCKET=str(self.socket)),
                              timeout=60)  # fmt: skip

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop(signal.SIGKILL)
        shutil.rmtree(self.dir, ignore_errors=True)
