"""What a run ran on, for reproducibility: interpreter, packages, git, OS, hardware.

Lazy imports: importlib.metadata (~30 ms) is imported inside the functions that use it,
so importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
import sys
from typing import Any

from greenml.__version__ import __version__
from greenml.hardware import cpu_model_name
from greenml.measure.sensors.nvml import nvml_environment

HOSTNAME_ENV = "GREENML_NO_HOSTNAME"


def capture_environment(
    include_hostname: bool | None = None, cwd: str | None = None
) -> dict[str, Any]:
    """Describe this machine and software.

    Args:
        include_hostname: Record the host name; defaults to on unless
            ``GREENML_NO_HOSTNAME`` is set.
        cwd: Directory whose git commit is recorded (default: the current one).
    """
    if include_hostname is None:
        include_hostname = os.environ.get(HOSTNAME_ENV, "") in ("", "0", "false")

    return {
        "greenml_version": __version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "packages": installed_packages(),
        "git": git_state(cwd),
        "os": {
            "system": platform.system(),
            "release": platform.release(),
            "platform": platform.platform(),
        },
        "cpu": {"model": cpu_model_name(), "logical_cores": os.cpu_count()},
        "gpu": nvml_environment(),
        "hostname": socket.gethostname() if include_hostname else None,
    }


def installed_packages() -> dict[str, Any]:
    """Distributions importable by this interpreter, and a hash of that list.

    Listed once per process (~0.3 s with a few hundred distributions): a process
    that stores several runs (``greenml.Run`` in a loop) gets a copy of the first list.
    """
    global _packages
    if _packages is None:
        _packages = _list_packages()
    return {**_packages, "distributions": dict(_packages["distributions"])}


_packages: dict[str, Any] | None = None


def _list_packages() -> dict[str, Any]:
    from importlib.metadata import distributions

    found: dict[str, str] = {}
    for dist in distributions():
        name = dist.metadata["Name"]
        if name:
            found[name.lower()] = dist.version
    listing = "\n".join(f"{n}=={v}" for n, v in sorted(found.items()))
    return {
        "count": len(found),
        "sha256": hashlib.sha256(listing.encode()).hexdigest(),
        "distributions": dict(sorted(found.items())),
    }


def git_state(cwd: str | None = None) -> dict[str, Any] | None:
    """Commit and dirty flag of the git work tree at ``cwd``; ``None`` outside one."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {
        "commit": commit,
        "dirty": bool(status) if status is not None else None,
        "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
    }
