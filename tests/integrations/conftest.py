"""Fake V100s on a manual clock, a Meter over them, and the optimizer's options.

``tests/optimize/test_power_limit.py`` imports these fixtures too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from greenml.measure.meter import Meter
from greenml.measure.sensors.nvml import NvmlSensor
from tests.fakes.fake_pynvml import FakeClock, FakeNvml
from tests.optimize.fake_gpus import v100s


@pytest.fixture(autouse=True)
def _private_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GREENML_GPU_STATE", str(tmp_path / "gpu_state.json"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


@pytest.fixture
def nvml() -> FakeNvml:
    """One busy V100: each training step moves the clock by its step time at the limit."""
    return FakeNvml(v100s(1), FakeClock(1000.0))


@pytest.fixture
def meter(nvml: FakeNvml) -> Iterator[Meter]:
    with Meter(sensors=[NvmlSensor(nvml=nvml)], sample_hz=0, clock=nvml.clock) as m:
        yield m


@pytest.fixture
def tuning(nvml: FakeNvml) -> dict[str, Any]:
    """PowerLimitOptimizer options: 7 limits × (1 warm-up + 2 measured) = 21 steps (the wait
    for a steady power is off: it is tested in tests/optimize/test_steady.py)."""
    return {"nvml": nvml, "clock": nvml.clock, "warmup_steps": 1, "profile_steps": 2,
            "wait_for_steady": False}  # fmt: skip
