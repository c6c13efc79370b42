"""Read the supported graphics clocks of GPUs, lock them, and always unlock them (DVFS).

Two backends behind one :class:`ClockControl`:

- NVIDIA (NVML): ``nvmlDeviceGetSupportedMemoryClocks`` then
  ``nvmlDeviceGetSupportedGraphicsClocks(handle, memory MHz)`` list the clocks;
  ``nvmlDeviceSetGpuLockedClocks(handle, min MHz, max MHz)`` locks (Volta and
  newer, root only), ``nvmlDeviceResetGpuLockedClocks`` unlocks.
- AMD (AMD SMI): ``amdsmi_get_clk_freq(handle, AmdSmiClkType.GFX)["frequency"]``
  lists the clock levels in Hz; ``amdsmi_set_gpu_perf_determinism_mode(handle, MHz)``
  caps the graphics clock (performance level ``DETERMINISM``), and the original
  performance level (``amdsmi_get_gpu_perf_level``) is put back to unlock.

A locked clock outlives the process, like a power limit: before the first lock
the original state of each GPU goes to the clocks' state file (keyed by UUID);
:meth:`ClockControl.restore` puts it back, :meth:`ClockControl.guard` does so at
exit and on SIGTERM, and ``greenml gpu restore`` after a crash.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.errors import (
    ClockLockError,
    ClockPermissionError,
    ClockUnsupported,
    ConfigError,
    SensorError,
    SensorUnavailable,
)
from greenml.optimize.exit_guard import ExitGuard
from greenml.optimize.gpu_clock_backends import AmdClocks, ClockBackend, NvmlClocks
from greenml.optimize.gpu_state import default_clock_state_file, locked, read_state_at, write_state

CLOCKS_KEY = "original_clocks"


@dataclass(frozen=True)
class GpuClocks:
    """Graphics clocks of one GPU, in MHz.

    Attributes:
        key: ``gpu0`` … (the CUDA / HIP ordinal).
        supported_mhz: Clocks that can be locked, highest first.
        current_mhz: The graphics clock now (None when not reported).
    """

    key: str
    index: int
    uuid: str
    name: str
    vendor: str
    supported_mhz: tuple[int, ...]
    current_mhz: float | None

    @property
    def max_mhz(self) -> int:
        return self.supported_mhz[0]

    @property
    def min_mhz(self) -> int:
        return self.supported_mhz[-1]

    def nearest(self, mhz: float) -> int:
        """The highest supported clock not above ``mhz`` (the lowest when all are above).

        Raises:
            ConfigError: ``mhz`` is outside the supported range.
        """
        if not self.min_mhz <= mhz <= self.max_mhz:
            raise ConfigError(
                f"clock {mhz:g} MHz is outside the range of {self.key} ({self.name}): "
                f"{self.min_mhz}–{self.max_mhz} MHz"
            )
        return max(c for c in self.supported_mhz if c <= mhz)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["supported_mhz"] = list(self.supported_mhz)
        return out


class ClockControl:
    """Reads, locks and unlocks the graphics clocks of the visible GPUs of one vendor.

    Args:
        backend: NVML or AMD SMI (:func:`open_clock_control` picks).
        state_file: Where originals are kept (default :func:`default_clock_state_file`).
    """

    def __init__(self, backend: ClockBackend, state_file: str | Path | None = None) -> None:
        self._backend = backend
        self.state_file = Path(state_file) if state_file is not None else default_clock_state_file()
        self._gpus = {f"gpu{i}": (i, h, uuid, name) for i, h, uuid, name in backend.visible()}
        self._changed: set[str] = set()  # uuids locked by this object
        self._guard: ExitGuard | None = None

    @property
    def vendor(self) -> str:
        return self._backend.vendor

    @property
    def keys(self) -> list[str]:
        return list(self._gpus)

    def clocks(self) -> list[GpuClocks]:
        return [self.get(key) for key in self._gpus]

    def get(self, key: str) -> GpuClocks:
        index, handle, uuid, name = self._gpu(key)
        try:
            supported = tuple(sorted(set(self._backend.supported_mhz(handle)), reverse=True))
            current = self._backend.current_mhz(handle)
        except self._backend.errors as exc:
            raise SensorError(f"{key}: cannot read its clocks: {exc}") from exc
        if not supported:
            raise SensorError(f"{key}: the driver lists no supported graphics clock")
        return GpuClocks(key, index, uuid, name, self.vendor, supported, current)

    def check_permission(self) -> None:
        """Raise ClockPermissionError now rather than mid-training (nothing stays changed)."""
        for key in self._gpus:
            _, handle, _, name = self._gpu(key)
            self._call(key, name, self._backend.check_permission, handle)

    def lock(self, key: str, mhz: float) -> int:
        """Lock one GPU's graphics clock at the supported clock nearest below ``mhz``.

        Returns the clock locked, in MHz.

        Raises:
            ConfigError: ``mhz`` outside the supported range (named).
            ClockPermissionError: Not root / CAP_SYS_ADMIN.
            ClockUnsupported: The GPU does not allow it.
        """
        gpu = self.get(key)
        target = gpu.nearest(mhz)
        _, handle, uuid, _ = self._gpu(key)
        if uuid not in self._changed:
            self._save_original(gpu, self._backend.original(handle))
            self._changed.add(uuid)
        self._call(key, gpu.name, self._backend.lock, handle, target)
        return target

    def lock_all(self, mhz: float) -> None:
        for gpu in self.clocks():
            gpu.nearest(mhz)
        for key in self._gpus:
            self.lock(key, mhz)

    def restore(self) -> dict[str, str]:
        """Unlock the GPUs this object locked, as they were; {key: original}."""
        restored: dict[str, str] = {}
        if not self._changed:
            return restored
        with locked(self.state_file):
            saved = read_state_at(self.state_file, CLOCKS_KEY)
            for key, (_, handle, uuid, name) in self._gpus.items():
                if uuid not in self._changed:
                    continue
                original = str(saved.get(uuid, {}).get(CLOCKS_KEY, "unlocked"))
                self._call(key, name, self._backend.unlock, handle, original)
                restored[key] = original
                saved.pop(uuid, None)
                self._changed.discard(uuid)
            write_state(self.state_file, saved)
        return restored

    def guard(self) -> None:
        """Restore at interpreter exit and on SIGTERM (the program's handler still runs)."""
        if self._guard is None:
            self._guard = ExitGuard(self._restore_quietly, "restoring GPU clocks")
            self._guard.install()

    @property
    def changed(self) -> bool:
        return bool(self._changed)

    def close(self) -> None:
        if self._guard is not None:
            self._guard.uninstall()
            self._guard = None
        self._backend.close()

    def _restore_quietly(self) -> None:
        self.restore()

    def _gpu(self, key: str) -> tuple[int, Any, str, str]:
        try:
            return self._gpus[key]
        except KeyError:
            raise ConfigError(f"no GPU {key!r} here ({', '.join(self._gpus)})") from None

    def _call(self, key: str, name: str, fn: Any, *args: Any) -> None:
        call_mapped(self._backend, f"{key} ({name})", fn, *args)

    def _save_original(self, gpu: GpuClocks, original: str) -> None:
        with locked(self.state_file):
            saved = read_state_at(self.state_file, CLOCKS_KEY)
            if gpu.uuid not in saved:  # after a crash the file, not the GPU, knows the original
                saved[gpu.uuid] = {
                    CLOCKS_KEY: original, "vendor": self.vendor, "name": gpu.name,
                    "index": gpu.index, "saved_at": datetime.now(timezone.utc).isoformat(),
                    "pid": os.getpid(), "host": socket.gethostname(),
                }  # fmt: skip
                write_state(self.state_file, saved)


def call_mapped(backend: ClockBackend, who: str, fn: Any, *args: Any) -> None:
    """``fn(*args)``, the backend's errors mapped to what the user must do."""
    try:
        fn(*args)
    except backend.errors as exc:
        kind = backend.classify(exc)
        if kind == "permission":
            raise ClockPermissionError(f"{who}: refused ({exc}); {backend.hint}") from exc
        if kind == "unsupported":
            raise ClockUnsupported(f"{who} does not allow locking its clocks ({exc})") from exc
        raise ClockLockError(f"{who}: changing its clocks failed: {exc}") from exc


def open_clock_control(
    gpus: Sequence[int] | None = None,
    *,
    nvml: Any | None = None,
    amdsmi: Any | None = None,
    state_file: str | Path | None = None,
) -> ClockControl:
    """Clock control of NVIDIA GPUs (NVML), else of AMD GPUs (AMD SMI).

    Raises:
        SensorUnavailable: Neither library can open a GPU.
        ConfigError: An index that is not visible.
    """
    if amdsmi is None:
        try:
            return ClockControl(NvmlClocks(gpus, nvml), state_file)
        except SensorUnavailable as exc:
            if nvml is not None:
                raise
            first = exc
    try:
        return ClockControl(AmdClocks(gpus, amdsmi), state_file)
    except SensorUnavailable:
        if amdsmi is not None:
            raise
        raise first from None


def restore_clocks_from_state(
    state_file: str | Path | None = None, *, nvml: Any | None = None, amdsmi: Any | None = None
) -> tuple[dict[str, str], list[str]]:
    """Unlock every GPU of the clocks' state file (after a crash): ({uuid: original}, missing).

    GPUs this machine does not have stay in the file.
    """
    path = Path(state_file) if state_file is not None else default_clock_state_file()
    restored: dict[str, str] = {}
    if not path.exists():
        return restored, []
    with locked(path):
        saved = read_state_at(path, CLOCKS_KEY)
        try:
            backends: tuple[tuple[str, type[NvmlClocks | AmdClocks], Any], ...] = (
                ("nvidia", NvmlClocks, nvml), ("amd", AmdClocks, amdsmi),
            )  # fmt: skip
            for vendor, cls, module in backends:
                wanted = {u: e for u, e in saved.items() if e.get("vendor", "nvidia") == vendor}
                if not wanted:
                    continue
                try:
                    backend: ClockBackend = cls(None, module, all_gpus=True)
                except SensorUnavailable:
                    continue  # that library is not here: its GPUs are not on this machine
                try:
                    handles = {uuid: h for _, h, uuid, _ in backend.visible()}
                    for uuid, entry in wanted.items():
                        if uuid in handles:
                            who = f"{uuid} ({entry.get('name', 'GPU')})"
                            original = str(entry[CLOCKS_KEY])
                            call_mapped(backend, who, backend.unlock, handles[uuid], original)
                            restored[uuid] = str(entry[CLOCKS_KEY])
                            del saved[uuid]
                finally:
                    with contextlib.suppress(Exception):
                        backend.close()
        finally:
            write_state(path, saved)
    return restored, sorted(saved)
