"""AMD GPU power caps through a fake AMD SMI (µW caps, [min, max] range, root only):
set, restore, restore after a crash, and the power-limit optimizer driving them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from greenml.errors import ConfigError, PowerLimitPermissionError
from greenml.measure.meter import Meter
from greenml.measure.sensors.amdsmi_gpu import AmdGpuSensor
from greenml.optimize.amd_control import AmdGpuControl
from greenml.optimize.gpu_restore import restore_from_state
from greenml.optimize.gpu_state import read_state
from greenml.optimize.power_limit import PowerLimitOptimizer
from tests.fakes.fake_amdsmi import FakeAmdSmi, mi300x
from tests.helpers import ManualClock

REPO = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def _no_visibility_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)


def test_caps_are_watts_and_are_restored(tmp_path: Path) -> None:
    smi = FakeAmdSmi(mi300x(2))
    state = tmp_path / "state.json"
    control = AmdGpuControl(amdsmi=smi, state_file=state)
    gpu = control.get("gpu1")
    assert (gpu.limit_w, gpu.min_w, gpu.max_w) == (750.0, 200.0, 750.0)
    control.set_all(500.0)
    assert [g.cap_uw for g in smi.gpus] == [500_000_000, 500_000_000]
    saved = read_state(state)
    assert {e["vendor"] for e in saved.values()} == {"amd"}
    assert {e["original_limit_w"] for e in saved.values()} == {750.0}
    assert control.restore() == {"gpu0": 750.0, "gpu1": 750.0}
    assert [g.cap_uw for g in smi.gpus] == [750_000_000, 750_000_000]
    assert not state.exists()
    control.close()


def test_out_of_range_and_without_root(tmp_path: Path) -> None:
    control = AmdGpuControl(amdsmi=FakeAmdSmi(mi300x(1), privileged=False),
                            state_file=tmp_path / "s.json")  # fmt: skip
    with pytest.raises(ConfigError, match="200–750 W"):
        control.set_limit("gpu0", 100.0)
    with pytest.raises(PowerLimitPermissionError, match="amd-smi set --gpu 0 --power-cap"):
        control.check_permission()


def test_restore_after_a_crash(tmp_path: Path) -> None:
    shared = tmp_path / "gpus.json"
    state = tmp_path / "state.json"
    script = f"""
import os, signal
from pathlib import Path
from tests.fakes.fake_amdsmi import FakeAmdSmi, mi300x
from greenml.optimize.amd_control import AmdGpuControl
control = AmdGpuControl(amdsmi=FakeAmdSmi(mi300x(2), state_path=Path({str(shared)!r})),
                        state_file={str(state)!r})
control.set_all(300.0)
os.kill(os.getpid(), signal.SIGKILL)
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60)
    assert done.returncode == -signal.SIGKILL
    assert {g["cap_uw"] for g in json.loads(shared.read_text()).values()} == {300_000_000}
    smi = FakeAmdSmi(mi300x(2), state_path=shared)  # the same GPUs, seen by `gpu restore`
    result = restore_from_state(state, amdsmi=smi)
    assert sorted(result.restored.values()) == [750.0, 750.0] and result.missing == []
    assert [g.cap_uw for g in smi.gpus] == [750_000_000, 750_000_000]
    assert not state.exists()


def test_the_power_limit_optimizer_drives_amd_caps(tmp_path: Path) -> None:
    clock = ManualClock(0.0)
    smi = FakeAmdSmi(mi300x(1, power_w=400.0), clock)
    control = AmdGpuControl(amdsmi=smi, state_file=tmp_path / "s.json")
    meter = Meter(sensors=[AmdGpuSensor(amdsmi=smi)], sample_hz=0, clock=clock,
                  wall_clock=lambda: 1.7e9)  # fmt: skip
    opt = PowerLimitOptimizer(meter, control=control, step_w=275.0, warmup_steps=1,
                              profile_steps=2, clock=clock, wait_for_steady=False)  # fmt: skip
    assert opt.plan.limits_w == (750.0, 475.0, 200.0)
    caps = []
    for _ in range(12):
        with opt.step():
            clock.advance(1.0)
            caps.append(smi.gpus[0].cap_uw / 1e6)
    assert {750.0, 475.0, 200.0} <= set(caps)
    assert opt.chosen is not None
    opt.close()
    assert smi.gpus[0].cap_uw == 750_000_000  # put back on close
    meter.close()
