"""FakeNvml with graphics clocks that can be locked, as nvidia-ml-py documents them.

- ``nvmlDeviceGetSupportedMemoryClocks(h)`` → MHz list; ``nvmlDeviceGetSupportedGraphicsClocks(h,
  memory MHz)`` → MHz list (an H100 SXM lists 1980 down to 210 MHz in 15 MHz steps, as
  ``nvidia-smi -q -d SUPPORTED_CLOCKS`` shows).
- ``nvmlDeviceSetGpuLockedClocks(h, min MHz, max MHz)``: Volta and newer
  (NVML_ERROR_NOT_SUPPORTED before), root only (NVML_ERROR_NO_PERMISSION),
  NVML_ERROR_INVALID_ARGUMENT when min > max or outside the supported range.
- ``nvmlDeviceResetGpuLockedClocks(h)``: root only.
- ``nvmlDeviceGetClockInfo(h, NVML_CLOCK_GRAPHICS=0)``: the clock now (the lock's max).

With ``clock_path`` the locks live in a JSON file, so a crashed process and a later
``greenml gpu restore`` see the same GPUs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.fakes.fake_pynvml import FakeGpuSpec, FakeNvml, _fail, _Handle

H100_CLOCKS = tuple(range(1980, 209, -15))
H100_MEMORY = (2619,)


class FakeNvmlClocks(FakeNvml):
    NVML_CLOCK_GRAPHICS = 0

    def __init__(self, gpus: Sequence[FakeGpuSpec], *args: Any, clock_path: Path | None = None,
                 **kwargs: Any) -> None:  # fmt: skip
        super().__init__(gpus, *args, **kwargs)
        self.clock_path = clock_path
        self.locks: dict[str, tuple[int, int]] = {}
        if clock_path is not None and clock_path.exists():
            self.locks = {k: tuple(v) for k, v in json.loads(clock_path.read_text()).items()}  # type: ignore[misc]

    def _save(self) -> None:
        if self.clock_path is not None:
            tmp = self.clock_path.with_name(f".{self.clock_path.name}.{os.getpid()}")
            tmp.write_text(json.dumps(self.locks))
            os.replace(tmp, self.clock_path)

    def nvmlDeviceGetSupportedMemoryClocks(self, h: _Handle) -> list[int]:
        self._gpu(h, "nvmlDeviceGetSupportedMemoryClocks")
        return list(H100_MEMORY)

    def nvmlDeviceGetSupportedGraphicsClocks(self, h: _Handle, memory_mhz: int) -> list[int]:
        self._gpu(h, "nvmlDeviceGetSupportedGraphicsClocks")
        if memory_mhz not in H100_MEMORY:
            raise _fail("InvalidArgument")
        return list(H100_CLOCKS)

    def nvmlDeviceGetClockInfo(self, h: _Handle, clock_type: int) -> int:
        spec = self._gpu(h, "nvmlDeviceGetClockInfo")
        if clock_type == self.NVML_CLOCK_GRAPHICS:
            return self.locks.get(spec.uuid, (0, H100_CLOCKS[0]))[1]
        return super().nvmlDeviceGetClockInfo(h, clock_type)

    def nvmlDeviceSetGpuLockedClocks(self, h: _Handle, min_mhz: int, max_mhz: int) -> None:
        spec = self._gpu(h, "nvmlDeviceSetGpuLockedClocks")
        if not self.privileged:
            raise _fail("NoPermission")
        if not H100_CLOCKS[-1] <= min_mhz <= max_mhz <= H100_CLOCKS[0]:
            raise _fail("InvalidArgument")
        self.locks[spec.uuid] = (int(min_mhz), int(max_mhz))
        self._save()

    def nvmlDeviceResetGpuLockedClocks(self, h: _Handle) -> None:
        spec = self._gpu(h, "nvmlDeviceResetGpuLockedClocks")
        if not self.privileged:
            raise _fail("NoPermission")
        self.locks.pop(spec.uuid, None)
        self._save()


def h100s() -> FakeNvmlClocks:
    """Two H100s whose locks live in ``$GREENML_TEST_FAKE_CLOCKS`` (``GREENML_FAKE_NVML`` hook)."""
    from tests.fakes.fake_pynvml import h100

    return FakeNvmlClocks([h100("GPU-h100-a"), h100("GPU-h100-b")],
                          clock_path=Path(os.environ["GREENML_TEST_FAKE_CLOCKS"]))  # fmt: skip
