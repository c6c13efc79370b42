"""The energy the proxy shares out: a Meter window on the devices that serve.

On a GPU node, the node's GPUs (NVML energy counters where the GPU has one,
else sampled power); the CPU is left out, since the engine's CPU work is small
beside its GPUs' and RAPL would count every process of the machine. On a
CPU-only node, the CPU and DRAM: of the engine's process tree when its pid is
known (``--engine-pid`` or ``--engine-cmd``), else of the whole machine, and
the scope says which.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from greenml.errors import ConfigError
from greenml.measure.measurement import weakest_method

if TYPE_CHECKING:
    from greenml.measure.meter import Meter

WINDOW = "greenml-llm-proxy"


class MeterSource:
    """A running energy total of some of a Meter's devices (one window, peeked).

    Args:
        meter: The Meter (closed with this object when ``owned``).
        devices: Device keys to count; default: the GPUs, else everything.
        scope: What the devices cover, in words.
    """

    def __init__(
        self, meter: Meter, devices: list[str] | None = None, scope: str = "", owned: bool = True
    ) -> None:
        self.meter = meter
        gpus = [d.key for d in meter.devices if d.component == "gpu"]
        keys = devices if devices is not None else (gpus or [d.key for d in meter.devices])
        chosen = [d for d in meter.devices if d.key in keys]
        if not chosen:
            raise ConfigError("the Meter has no device to measure the engine with")
        self.keys = [d.key for d in chosen]
        self.method = weakest_method([d.method for d in chosen])
        self.uncertainty_rel = max(d.uncertainty_rel for d in chosen)
        names = ", ".join(f"{d.key} ({d.name})" for d in chosen)
        self.scope = f"{scope}: {names}" if scope else names
        self._owned = owned
        self._forget_at = time.monotonic() + 10.0
        self._lock = threading.Lock()
        meter.begin_window(WINDOW, sync_execution=False)

    def total_j(self) -> float:
        with self._lock:
            m = self.meter.peek_window(WINDOW)
        total = 0.0
        for component in m.components.values():
            for key, device in component.devices.items():
                if key in self.keys:
                    total += device.energy_j
        now = time.monotonic()
        if now >= self._forget_at:  # a long-lived Meter keeps only what the window needs
            self._forget_at = now + 10.0
            for key in self.keys:
                self.meter.forget_before(key, time.time() - 5.0)
        return total

    def close(self) -> None:
        try:
            self.meter.end_window(WINDOW, sync_execution=False)
        finally:
            if self._owned:
                self.meter.close()


def open_meter_source(engine_pid: int | None, sample_hz: float) -> MeterSource:
    """This node's Meter: its GPUs, else the engine's process tree, else the machine."""
    from greenml.measure.meter import Meter

    if engine_pid is not None:
        meter = Meter(sample_hz=sample_hz, cpu_scope="process", pid=engine_pid, sync_cuda=False)
    else:
        meter = Meter(sample_hz=sample_hz, sync_cuda=False)
    has_gpu = any(d.component == "gpu" for d in meter.devices)
    if has_gpu:
        scope = "GPUs of this node"
    elif engine_pid is not None:
        scope = f"CPU and DRAM of the engine's process tree (pid {engine_pid})"
    else:
        scope = "CPU and DRAM of the whole machine (no engine pid given)"
    return MeterSource(meter, scope=scope)
