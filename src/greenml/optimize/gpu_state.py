"""The state files of original GPU power limits and clocks: JSON keyed by GPU UUID.

Power limits and locked clocks each have a file (``gpu_power_limits.json``,
``gpu_clocks.json``). It lives in the per-user state folder (``$GREENML_GPU_STATE`` overrides), is
replaced atomically, and is locked while read-modify-written, since the ranks
of one machine share it. It is removed once nothing is left to restore.

Lazy imports: platformdirs (~10 ms) is imported only when the default state file is
needed, and fcntl (POSIX only) only when the file is locked.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

STATE_ENV = "GREENML_GPU_STATE"
STATE_FILENAME = "gpu_power_limits.json"
CLOCK_STATE_ENV = "GREENML_GPU_CLOCK_STATE"
CLOCK_STATE_FILENAME = "gpu_clocks.json"


def default_state_file() -> Path:
    """``$GREENML_GPU_STATE``, else ``gpu_power_limits.json`` in the per-user state folder."""
    override = os.environ.get(STATE_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_state_dir("greenml")) / STATE_FILENAME


def default_clock_state_file() -> Path:
    """``$GREENML_GPU_CLOCK_STATE``, else ``gpu_clocks.json`` next to the power limits' file."""
    override = os.environ.get(CLOCK_STATE_ENV)
    if override:
        return Path(override).expanduser()
    return default_state_file().with_name(CLOCK_STATE_FILENAME)


def read_state(state_file: str | Path | None = None) -> dict[str, dict[str, Any]]:
    """The saved originals, {uuid: entry}; {} when there is no state file."""
    return read_state_at(Path(state_file) if state_file is not None else default_state_file())


def read_state_at(path: Path, required: str = "original_limit_w") -> dict[str, dict[str, Any]]:
    """The entries of the state file at ``path``; ConfigError when it is not one.

    Every entry must hold ``required``: ``original_limit_w`` (a number) in the power
    limits' file, ``original_clocks`` in the clocks' file.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read the GPU state file {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text)
        gpus = data["gpus"]
        if not isinstance(gpus, dict):
            raise TypeError("'gpus' is not an object")
        entries = {str(k): dict(v) for k, v in gpus.items()}
        for entry in entries.values():
            if required == "original_limit_w":
                entry[required] = float(entry[required])
            elif required not in entry:
                raise KeyError(required)
        return entries
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not a greenml GPU state file ({exc})") from exc


def write_state(path: Path, gpus: dict[str, dict[str, Any]]) -> None:
    """Atomically replace the state file; remove it when nothing is left to restore."""
    try:
        if not gpus:
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"version": 1, "gpus": gpus}, indent=2) + "\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(f"cannot write the GPU state file {path}: {exc.strerror}") from exc


# flock conflicts between two descriptors of one process: a SIGTERM handler that
# restores while the main thread holds the lock must not wait for itself.
_process_lock = threading.RLock()
_depth = 0


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock next to ``path`` (ranks of one machine share the state file).

    Re-entrant within a process; across processes an ``flock`` on a lock file.
    """
    global _depth
    with _process_lock:
        if _depth:
            _depth += 1
            try:
                yield
            finally:
                _depth -= 1
            return
        try:
            import fcntl
        except ImportError:  # not POSIX: one process per machine is assumed
            fcntl = None  # type: ignore[assignment]
        fd = -1
        try:
            if fcntl is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as exc:
            if fd >= 0:
                os.close(fd)
            raise ConfigError(f"cannot lock the GPU state file {path}: {exc.strerror}") from exc
        _depth = 1
        try:
            yield
        finally:
            _depth = 0
            if fd >= 0:
                os.close(fd)
