"""What every GPU power-cap control shares: originals saved first, always put back.

A power limit (NVIDIA) or power cap (AMD) outlives the process that set it. So
before the first change the original of each GPU is written to the JSON state
file (keyed by UUID); :meth:`CapControl.restore` puts the originals back and
clears the file. An entry already in the file is never overwritten: after a
crash the file, not the GPU, knows the original.

:class:`CapControl` holds that logic once; a vendor class
(:class:`~greenml.optimize.gpu_control.GpuControl`,
:class:`~greenml.optimize.amd_control.AmdGpuControl`) supplies only how it
reads a GPU's limits (:meth:`CapControl.get`), writes one (``_write``) and
shuts its library down (``_shutdown``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from greenml.errors import ConfigError, SensorUnavailable
from greenml.optimize.gpu_state import default_state_file, locked, read_state_at, write_state

log = logging.getLogger(__name__)

H = TypeVar("H")


@dataclass(frozen=True)
class GpuLimits:
    """Power limits of one GPU, in watts.

    Attributes:
        key: ``gpu0`` ... as the Meter names it (the CUDA ordinal).
        index: The CUDA ordinal.
        uuid: NVML UUID, stable across reboots (the state file's key).
        limit_w: Limit in force now.
        default_w: Factory default limit.
        min_w: Lowest settable limit.
        max_w: Highest settable limit.
    """

    key: str
    index: int
    uuid: str
    name: str
    limit_w: float
    default_w: float
    min_w: float
    max_w: float

    @property
    def allowed(self) -> str:
        """The allowed range as people read it: ``100–300 W``."""
        return f"{self.min_w:g}–{self.max_w:g} W"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_limit(gpu: GpuLimits, limit_w: float) -> float:
    """``limit_w`` when ``gpu`` allows it; ConfigError naming the allowed range otherwise."""
    if not gpu.min_w <= limit_w <= gpu.max_w:
        raise ConfigError(
            f"power limit {limit_w:g} W is outside the allowed range of {gpu.key} "
            f"({gpu.name}): {gpu.allowed}"
        )
    return limit_w


def save_original(state_file: Path, gpu: GpuLimits, vendor: str = "nvidia") -> float:
    """Record ``gpu``'s limit as its original in ``state_file`` unless one is recorded.

    Returns the original: the recorded one when an earlier run left it there (after a
    crash the file, not the GPU, knows the original), else the limit now.
    """
    with locked(state_file):
        saved = read_state_at(state_file)
        entry = saved.get(gpu.uuid)
        if entry is not None:
            original = float(entry["original_limit_w"])
            if original != gpu.limit_w:
                log.warning(
                    "greenml: %s is at %g W but %s says its original limit is %g W "
                    "(an earlier run did not restore it); that original is kept",
                    gpu.key, gpu.limit_w, state_file, original,
                )  # fmt: skip
            return original
        saved[gpu.uuid] = {
            "original_limit_w": gpu.limit_w,
            "name": gpu.name,
            "index": gpu.index,
            "saved_at": datetime.now(timezone.utc).isoformat(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
        }
        if vendor != "nvidia":
            saved[gpu.uuid]["vendor"] = vendor
        write_state(state_file, saved)
        return gpu.limit_w


def choose_gpus(
    visible: Sequence[H], indices: Sequence[int] | None, noun: str = "GPU(s)"
) -> dict[int, H]:
    """The visible GPUs to control, by ordinal: all of them when ``indices`` is None.

    Raises:
        ConfigError: An ordinal that is not visible (``noun`` names what was counted).
    """
    chosen = range(len(visible)) if indices is None else list(dict.fromkeys(indices))
    out: dict[int, H] = {}
    for i in chosen:
        if not 0 <= i < len(visible):
            raise ConfigError(f"GPU index {i} requested but {len(visible)} {noun} are visible")
        out[i] = visible[i]
    return out


class CapControl(ABC):
    """Sets GPU power caps, originals saved to ``state_file`` first, and restores them.

    A subclass opens its library through ``__init__``, fills ``_handles``
    (``gpu0`` → a tuple whose first item is the ordinal) from :meth:`_choose`,
    and supplies :meth:`get`, :meth:`_write` and :meth:`_shutdown`.

    Args:
        state_file: Where originals are kept (default :func:`default_state_file`).
        init: Opens the vendor library.
        failure: The exception ``init`` raises when the library cannot be opened.
        library: The library as messages name it (``NVML``).

    Raises:
        SensorUnavailable: ``init`` failed.
    """

    vendor = "nvidia"
    _handles: dict[str, tuple[Any, ...]]

    def __init__(
        self,
        state_file: str | Path | None,
        init: Callable[[], object],
        failure: type[BaseException],
        library: str,
    ) -> None:
        self._originals: dict[str, float] = {}  # uuid → original limit, for GPUs we changed
        self.state_file = Path(state_file) if state_file is not None else default_state_file()
        try:
            init()
        except failure as exc:
            raise SensorUnavailable(f"{library} unavailable: {exc}") from exc
        self._open = True

    # -- what a vendor supplies -------------------------------------------

    @abstractmethod
    def get(self, key: str) -> GpuLimits:
        """The limits of one GPU (``gpu0`` ...)."""

    @abstractmethod
    def _write(self, gpu: GpuLimits, limit_w: float) -> None:
        """Set ``gpu``'s limit, the vendor's errors mapped to greenml's."""

    @abstractmethod
    def _shutdown(self) -> None:
        """Shut the vendor library down."""

    # -- reading -----------------------------------------------------------

    @property
    def keys(self) -> list[str]:
        """The controlled GPUs (``gpu0`` ...)."""
        return list(self._handles)

    def limits(self) -> list[GpuLimits]:
        """Current, default and allowed limits of every controlled GPU."""
        return [self.get(key) for key in self._handles]

    # -- setting -----------------------------------------------------------

    def check_permission(self) -> None:
        """Raise PowerLimitPermissionError now rather than mid-training.

        Sets each GPU's limit to the value it already has: the vendor library
        checks the privilege first, and nothing changes.
        """
        for gpu in self.limits():
            self._write(gpu, gpu.limit_w)

    def set_limit(self, key: str, limit_w: float) -> GpuLimits:
        """Set one GPU's limit, after saving its original to the state file.

        Raises:
            ConfigError: ``limit_w`` outside the GPU's allowed range (named).
            PowerLimitPermissionError: Not privileged enough.
            PowerLimitUnsupported: The GPU does not allow it.
        """
        gpu = self.get(key)
        check_limit(gpu, limit_w)
        if gpu.uuid not in self._originals:
            self._originals[gpu.uuid] = save_original(self.state_file, gpu, vendor=self.vendor)
        self._write(gpu, limit_w)
        return gpu

    def set_all(self, limit_w: float) -> None:
        """The same limit on every controlled GPU (each checked first)."""
        for gpu in self.limits():
            check_limit(gpu, limit_w)
        for key in self._handles:
            self.set_limit(key, limit_w)

    def restore(self) -> dict[str, float]:
        """Put back the originals of the GPUs this object changed; {key: restored W}."""
        restored: dict[str, float] = {}
        if not self._originals:
            return restored
        with locked(self.state_file):
            saved = read_state_at(self.state_file)
            for key in self._handles:
                gpu = self.get(key)
                if gpu.uuid not in self._originals:
                    continue
                entry = saved.get(gpu.uuid)
                original = float(entry["original_limit_w"]) if entry else self._originals[gpu.uuid]
                self._write(gpu, original)
                restored[key] = original
                saved.pop(gpu.uuid, None)
                del self._originals[gpu.uuid]
            write_state(self.state_file, saved)
        return restored

    @property
    def changed(self) -> bool:
        """Whether some limit was set and not yet restored."""
        return bool(self._originals)

    def close(self) -> None:
        """Shut the vendor library down (once); call :meth:`restore` first."""
        if self._open:
            self._open = False
            with contextlib.suppress(Exception):
                self._shutdown()

    # -- plumbing ----------------------------------------------------------

    def _choose(
        self, visible: Sequence[H], indices: Sequence[int] | None, noun: str = "GPU(s)"
    ) -> dict[int, H]:
        """:func:`choose_gpus`, the library shut down when an ordinal is not visible."""
        try:
            return choose_gpus(visible, indices, noun)
        except ConfigError:
            self.close()
            raise

    def _handle(self, key: str) -> tuple[Any, ...]:
        try:
            return self._handles[key]
        except KeyError:
            raise ConfigError(f"no GPU {key!r} here ({', '.join(self._handles)})") from None
