"""The node of the agent's tests: two trace-driven V100s whose limits and clocks live in files.

``nvml()`` is the factory named by ``GREENML_FAKE_NVML`` in the agent (root) and in the
users' processes: limits in ``$GREENML_TEST_FAKE_STATE``, locked clocks in
``$GREENML_TEST_FAKE_CLOCKS``, so the agent's changes are what a user's process sees (as
on one machine). Only root may set anything, as NVML without CAP_SYS_ADMIN.

The energy counter integrates the power of the limit in force at each read (read from the
shared file), so a user's Meter sees the power that the agent's limit causes. With
``$GREENML_TEST_SLOW_SET`` set, a set sleeps that many seconds after changing the GPU and
before returning: a test kills the agent in that moment, mid-change.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tests.fakes.fake_nvml_clocks import FakeNvmlClocks
from tests.fakes.fake_pynvml import FakeClock
from tests.optimize.fake_gpus import v100s

UUIDS = ("GPU-v100-aaaa-0000", "GPU-v100-bbbb-1111")


class NodeGpus(FakeNvmlClocks):
    """FakeNvmlClocks whose energy follows the limit read from the shared file at each read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._energy: dict[int, tuple[float, float]] = {}

    def nvmlDeviceGetTotalEnergyConsumption(self, h: Any) -> int:
        spec = self._gpu(h, "nvmlDeviceGetTotalEnergyConsumption")
        now = self.clock()
        t0, e0 = self._energy.get(h.index, (0.0, 0.0))
        energy = e0 + spec.curve_at(self._limit_w(spec))[0] * max(0.0, now - t0)
        self._energy[h.index] = (now, energy)
        return int(energy * 1000)

    def nvmlDeviceSetPowerManagementLimit(self, h: Any, limit_mw: int) -> None:
        super().nvmlDeviceSetPowerManagementLimit(h, limit_mw)
        if self.state_path is not None:  # any user may read a GPU's limit
            os.chmod(self.state_path, 0o644)
        slow = float(os.environ.get("GREENML_TEST_SLOW_SET", "0") or 0)
        if slow:
            Path(os.environ["GREENML_TEST_FAKE_STATE"] + ".set").touch()
            time.sleep(slow)


    def _save(self) -> None:
        super()._save()
        if self.clock_path is not None and self.clock_path.exists():
            os.chmod(self.clock_path, 0o644)


def nvml() -> NodeGpus:
    """The two V100s of this node, on a fake clock, privileged only for root."""
    return NodeGpus(
        v100s(2),
        FakeClock(0.0),
        privileged=os.geteuid() == 0,
        state_path=os.environ["GREENML_TEST_FAKE_STATE"],
        clock_path=Path(os.environ["GREENML_TEST_FAKE_CLOCKS"]),
    )
