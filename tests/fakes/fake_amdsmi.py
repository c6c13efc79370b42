"""A fake ``amdsmi`` module that behaves as AMD SMI's Python bindings document.

Sources (rocm.docs.amd.com/projects/amdsmi, Python API reference and the C
"Power Queries" / "Power Control" / amdsmi_power_cap_info_t pages):

- ``amdsmi_get_energy_count(h)`` → ``{"energy_accumulator": uint64 count,
  "counter_resolution": µJ per count, "timestamp": ns}``; bindings before ROCm 6.2
  named the count ``"power"``. "Not supported on virtual machine guest" → the
  call raises with ``AMDSMI_STATUS_NOT_SUPPORTED`` (2).
- ``amdsmi_get_power_info(h)`` → ``current_socket_power`` (MI300+) /
  ``average_socket_power`` (Navi, MI200 and earlier) in W, ``"N/A"`` or UINT32_MAX
  where not reported (amdsmi_power_info_t, ROCm 7.1 docs).
- ``amdsmi_get_power_cap_info(h)`` → ``power_cap``, ``default_power_cap``,
  ``min_power_cap``, ``max_power_cap`` in µW (Linux bare metal);
  ``amdsmi_set_power_cap(h, sensor_ind, cap_µW)``: outside [min, max] →
  ``AMDSMI_STATUS_INVAL`` (1), unprivileged → ``AMDSMI_STATUS_NO_PERM`` (10).
- ``amdsmi_get_gpu_activity(h)`` in percent; ``amdsmi_get_gpu_vram_usage(h)`` in MB.
- ``amdsmi_get_clk_freq(h, AmdSmiClkType.GFX)`` → ``{"num_supported", "current",
  "frequency": [Hz ...]}``; performance levels through ``amdsmi_get/set_gpu_perf_level``
  and ``amdsmi_set_gpu_perf_determinism_mode(h, MHz)`` (a GFX clock ceiling).

Power is constant per GPU (``power_w``); the counter is the exact integral on the
injected clock, in whole counts, and may start near 2^64 to wrap.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

RESOLUTION_UJ = 15.3  # µJ per count on MI200/MI300 (amd-smi metric --energy)


class AmdSmiRetCode(IntEnum):
    SUCCESS = 0
    STATUS_INVAL = 1
    STATUS_NOT_SUPPORTED = 2
    STATUS_NOT_YET_IMPLEMENTED = 3
    STATUS_NO_PERM = 10
    STATUS_NOT_FOUND = 31


class AmdSmiException(Exception):
    """Base of the bindings' exceptions."""


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, code: int) -> None:
        super().__init__(f"Error code:\n\t{code} | {AmdSmiRetCode(code).name}")
        self.err_code = code

    def get_error_code(self) -> int:
        return self.err_code


class AmdSmiInitFlags(IntEnum):
    INIT_AMD_GPUS = 2


class AmdSmiClkType(IntEnum):
    SYS = 0
    GFX = 0


class AmdSmiDevPerfLevel(IntEnum):
    AUTO = 0
    LOW = 1
    HIGH = 2
    MANUAL = 3
    DETERMINISM = 10


@dataclass
class FakeAmdGpu:
    uuid: str
    name: str = "AMD Instinct MI300X"
    power_w: float = 500.0
    start_count: int = 0
    vm_guest: bool = False  # no energy counter, as on a VM guest
    power_na: bool = False
    mi200: bool = False  # only average_socket_power; current_socket_power is UINT32_MAX
    partition: str = "SPX"
    cap_uw: int = 750_000_000
    default_cap_uw: int = 750_000_000
    min_cap_uw: int = 200_000_000
    max_cap_uw: int = 750_000_000
    clocks_mhz: tuple[int, ...] = (500, 1000, 1500, 2100)
    perf_level: str = "AMDSMI_DEV_PERF_LEVEL_AUTO"
    gfx_max_mhz: int | None = None  # set by determinism mode
    lost_at_s: float | None = None
    gfx_activity: int = 87
    vram_used_mb: int = 1024
    vram_total_mb: int = 196_592
    legacy_names: bool = False  # bindings before ROCm 6.2 ("power" for the count)
    rewind_at_s: float | None = None  # the count restarts (driver reload) at this time


class FakeAmdSmi:
    """The module: attributes named as in ``amdsmi``; state optionally shared in a JSON file."""

    AmdSmiException = AmdSmiException
    AmdSmiLibraryException = AmdSmiLibraryException
    AmdSmiRetCode = AmdSmiRetCode
    AmdSmiInitFlags = AmdSmiInitFlags
    AmdSmiClkType = AmdSmiClkType
    AmdSmiDevPerfLevel = AmdSmiDevPerfLevel

    def __init__(
        self,
        gpus: Sequence[FakeAmdGpu],
        clock: Callable[[], float] = lambda: 0.0,
        privileged: bool = True,
        state_path: Path | None = None,
    ) -> None:
        self.gpus = list(gpus)
        self.clock = clock
        self.privileged = privileged
        self.state_path = state_path
        self.initialized = 0
        self.handles = [SimpleNamespace(index=i) for i in range(len(self.gpus))]
        if state_path is not None and state_path.exists():
            self._load()

    # -- shared state (so a later `greenml gpu restore` sees the same GPUs) --
    def _load(self) -> None:
        assert self.state_path is not None
        saved = json.loads(self.state_path.read_text())
        for gpu in self.gpus:
            entry = saved.get(gpu.uuid, {})
            gpu.cap_uw = entry.get("cap_uw", gpu.cap_uw)
            gpu.perf_level = entry.get("perf_level", gpu.perf_level)
            gpu.gfx_max_mhz = entry.get("gfx_max_mhz", gpu.gfx_max_mhz)

    def _save(self) -> None:
        if self.state_path is not None:
            self.state_path.write_text(json.dumps({
                g.uuid: {"cap_uw": g.cap_uw, "perf_level": g.perf_level,
                         "gfx_max_mhz": g.gfx_max_mhz} for g in self.gpus
            }))  # fmt: skip

    def _gpu(self, handle: Any) -> FakeAmdGpu:
        gpu = self.gpus[handle.index]
        if gpu.lost_at_s is not None and self.clock() >= gpu.lost_at_s:
            raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_NOT_FOUND)
        return gpu

    def _need_privilege(self) -> None:
        if not self.privileged:
            raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_NO_PERM)

    # -- library ----------------------------------------------------------
    def amdsmi_init(self, flags: int = AmdSmiInitFlags.INIT_AMD_GPUS) -> None:
        self.initialized += 1

    def amdsmi_shut_down(self) -> None:
        self.initialized -= 1

    def amdsmi_get_processor_handles(self) -> list[Any]:
        return list(self.handles)

    def amdsmi_get_gpu_device_uuid(self, handle: Any) -> str:
        return self.gpus[handle.index].uuid

    def amdsmi_get_gpu_asic_info(self, handle: Any) -> dict[str, Any]:
        return {"market_name": self._gpu(handle).name, "vendor_id": "0x1002"}

    def amdsmi_get_energy_count(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle)
        if gpu.vm_guest:
            raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_NOT_SUPPORTED)
        t = self.clock()
        since = t if gpu.rewind_at_s is None or t < gpu.rewind_at_s else t - gpu.rewind_at_s
        start = gpu.start_count if gpu.rewind_at_s is None or t < gpu.rewind_at_s else 0
        count = (start + int(gpu.power_w * since * 1e6 / RESOLUTION_UJ)) % 2**64
        key = "power" if gpu.legacy_names else "energy_accumulator"
        return {key: count, "counter_resolution": RESOLUTION_UJ, "timestamp": int(t * 1e9)}

    def amdsmi_get_power_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle)
        watts: Any = "N/A" if gpu.power_na else int(gpu.power_w)
        current: Any = 2**32 - 1 if gpu.mi200 else watts
        return {"current_socket_power": current, "average_socket_power": watts,
                "gfx_voltage": 800, "soc_voltage": 900, "mem_voltage": 1100,
                "power_limit": gpu.cap_uw // 1_000_000}  # fmt: skip

    def amdsmi_get_gpu_activity(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle)
        return {"gfx_activity": gpu.gfx_activity, "umc_activity": 40, "mm_activity": "N/A"}

    def amdsmi_get_gpu_vram_usage(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle)
        return {"vram_total": gpu.vram_total_mb, "vram_used": gpu.vram_used_mb}

    def amdsmi_get_gpu_compute_partition(self, handle: Any) -> str:
        return self._gpu(handle).partition

    def amdsmi_get_power_cap_info(self, handle: Any) -> dict[str, Any]:
        gpu = self._gpu(handle)
        return {"power_cap": gpu.cap_uw, "default_power_cap": gpu.default_cap_uw,
                "dpm_cap": 2100, "min_power_cap": gpu.min_cap_uw,
                "max_power_cap": gpu.max_cap_uw}  # fmt: skip

    def amdsmi_set_power_cap(self, handle: Any, sensor_ind: int, cap: int) -> None:
        gpu = self._gpu(handle)
        self._need_privilege()
        if not gpu.min_cap_uw <= cap <= gpu.max_cap_uw:
            raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_INVAL)
        gpu.cap_uw = int(cap)
        self._save()

    def amdsmi_get_clk_freq(self, handle: Any, clk_type: int) -> dict[str, Any]:
        gpu = self._gpu(handle)
        return {"num_supported": len(gpu.clocks_mhz), "current": len(gpu.clocks_mhz) - 1,
                "frequency": [mhz * 1_000_000 for mhz in gpu.clocks_mhz]}  # fmt: skip

    def amdsmi_get_gpu_perf_level(self, handle: Any) -> str:
        return self._gpu(handle).perf_level

    def amdsmi_set_gpu_perf_level(self, handle: Any, level: int) -> None:
        gpu = self._gpu(handle)
        self._need_privilege()
        gpu.perf_level = f"AMDSMI_DEV_PERF_LEVEL_{AmdSmiDevPerfLevel(level).name}"
        if level == AmdSmiDevPerfLevel.AUTO:
            gpu.gfx_max_mhz = None
        self._save()

    def amdsmi_set_gpu_perf_determinism_mode(self, handle: Any, clkvalue: int) -> None:
        gpu = self._gpu(handle)
        self._need_privilege()
        if not gpu.clocks_mhz[0] <= clkvalue <= gpu.clocks_mhz[-1]:
            raise AmdSmiLibraryException(AmdSmiRetCode.STATUS_INVAL)
        gpu.perf_level = "AMDSMI_DEV_PERF_LEVEL_DETERMINISM"
        gpu.gfx_max_mhz = int(clkvalue)
        self._save()


def mi300x(n: int = 2, **kwargs: Any) -> list[FakeAmdGpu]:
    """``n`` MI300X GPUs with distinct UUIDs."""
    return [FakeAmdGpu(uuid=f"{i:02x}ff74a1-0000-1000-80ea-e05c945bb3b{i}", **kwargs)
            for i in range(n)]  # fmt: skip



def amd_server() -> FakeAmdSmi:
    """Two MI300X at 300 W on the real monotonic clock (``GREENML_FAKE_AMDSMI`` hook)."""
    import time

    return FakeAmdSmi(mi300x(2, power_w=300.0), clock=time.monotonic)
