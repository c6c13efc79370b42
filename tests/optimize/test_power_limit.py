"""PowerLimitOptimizer on fake V100s whose power and step time follow the Zeus V100 trace."""

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
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.optimize.gpu_state import read_state
from greenml.optimize.power_limit import PowerLimitOptimizer
from greenml.optimize.power_plan import profile_limits
from tests.fakes.fake_pynvml import FakeClock, FakeNvml
from tests.integrations import conftest as gpu_fixtures
from tests.optimize.fake_gpus import FACTORY, UUIDS, expected_choice, v100_curve, v100s

REPO = Path(__file__).parents[2]
LIMITS = [250.0, 225.0, 200.0, 175.0, 150.0, 125.0, 100.0]

# The fake V100, its Meter and the private GPU-state file, as the integration tests have them.
_private_state = gpu_fixtures._private_state
nvml = gpu_fixtures.nvml
meter = gpu_fixtures.meter


def optimizer(nvml: FakeNvml, meter: Meter, **kw: object) -> PowerLimitOptimizer:
    """The fake V100's power is steady at once: these tests count steps, so no settling wait
    (tests/optimize/test_steady.py covers it)."""
    kw.setdefault("wait_for_steady", False)
    return PowerLimitOptimizer(meter, nvml=nvml, clock=nvml.clock, **kw)  # type: ignore[arg-type]


def train(opt: PowerLimitOptimizer, nvml: FakeNvml, steps: int, settle_s: float = 0.0) -> None:
    """Steps on the fake GPU; the first step after a change of limit is ``settle_s`` slower."""
    last = None
    for _ in range(steps):
        with opt.step():
            nvml.run_step()
            if nvml.gpus[0].power_limit_w != last:
                nvml.clock.advance(settle_s)  # type: ignore[attr-defined]
                last = nvml.gpus[0].power_limit_w


def test_profile_limits_cover_the_range() -> None:
    assert profile_limits(100, 250, 25) == LIMITS
    assert profile_limits(150, 250, 40) == [250, 210, 170, 150]
    with pytest.raises(ConfigError, match="step must be > 0"):
        profile_limits(100, 250, 0)


def test_profiles_every_limit_and_keeps_the_cheapest(nvml: FakeNvml, meter: Meter) -> None:
    opt = optimizer(nvml, meter, eta=0.5, warmup_steps=2, profile_steps=3)
    assert opt.plan.limits_w == tuple(LIMITS) and opt.plan.steps == 35
    train(opt, nvml, 34, settle_s=5.0)
    assert opt.phase == "profile" and opt.chosen is None
    train(opt, nvml, 1 + 10)
    assert opt.phase == "done"
    assert [p.power_limit_w for p in opt.profiles] == LIMITS
    truth = {w: (t, p * t) for w, p, t in v100_curve()}
    for profile in opt.profiles:  # warm-up (with its slow first step) is not in the profile
        time_s, energy_j = truth[profile.power_limit_w]
        assert profile.time_s == pytest.approx(time_s, rel=1e-9)
        assert profile.energy_j == pytest.approx(energy_j, abs=1e-3)
    assert opt.chosen is not None and opt.chosen.power_limit_w == expected_choice(0.5) == 175.0
    assert nvml.gpus[0].power_limit_w == 175.0  # applied and kept
    assert [w for _, w in nvml.set_calls] == [250.0, *LIMITS, 175.0]  # a probe, profiles, keep
    assert opt.energy_method == "counter" and opt.energy_uncertainty_rel == 0.05
    assert read_state(os.environ["GREENML_GPU_STATE"])[UUIDS[0]]["original_limit_w"] == 250.0
    opt.close()
    assert nvml.gpus[0].power_limit_w == 250.0
    assert not Path(os.environ["GREENML_GPU_STATE"]).exists()
    assert opt.phase == "closed" and opt.current_limit_w is None


@pytest.mark.parametrize(("eta", "expected"), [(0.0, 250.0), (1.0, 150.0)])
def test_eta_moves_the_choice(nvml: FakeNvml, meter: Meter, eta: float, expected: float) -> None:
    with optimizer(nvml, meter, eta=eta, warmup_steps=0, profile_steps=1) as opt:
        train(opt, nvml, 8)
        assert opt.chosen is not None and opt.chosen.power_limit_w == expected
        assert expected == expected_choice(eta)
    assert nvml.gpus[0].power_limit_w == 250.0


def test_slowdown_bound_stops_early_and_saves_energy(nvml: FakeNvml, meter: Meter) -> None:
    with optimizer(nvml, meter, max_slowdown=0.06, warmup_steps=1, profile_steps=2) as opt:
        train(opt, nvml, 40)
        # 175 W is 9.6 % slower than 250 W: profiling stops there; 200 W is 5.3 % slower.
        assert [p.power_limit_w for p in opt.profiles] == [250.0, 225.0, 200.0, 175.0]
        assert opt.chosen is not None and opt.chosen.power_limit_w == 200.0
        assert "within 6.0% slowdown" in opt.plan.objective


def test_dry_run_sets_nothing_and_needs_no_privilege() -> None:
    nvml = FakeNvml(v100s(2), FakeClock(), privileged=False)
    opt = PowerLimitOptimizer(nvml=nvml, dry_run=True, step_w=50, min_w=120, warmup_steps=1)
    assert opt.plan.limits_w == (250.0, 200.0, 150.0, 120.0)
    assert opt.plan.to_dict()["profiling_steps"] == 4 * 6 and len(opt.plan.gpus) == 2
    for _ in range(30):
        with opt.step():
            nvml.run_step()
    assert opt.phase == "dry-run" and nvml.set_calls == []
    opt.close()


def test_bad_input_names_the_allowed_range(nvml: FakeNvml, meter: Meter) -> None:
    with pytest.raises(ConfigError, match=r"300 W is outside the allowed range .*100–250 W"):
        optimizer(nvml, meter, max_w=300.0)
    with pytest.raises(ConfigError, match="eta must be between 0 and 1"):
        optimizer(nvml, meter, eta=1.5)
    with pytest.raises(ConfigError, match="profile_steps >= 1"):
        optimizer(nvml, meter, profile_steps=0)
    assert nvml.set_calls == []


def test_without_privilege_it_fails_before_training(tmp_path: Path) -> None:
    nvml = FakeNvml(v100s(1), FakeClock(), privileged=False)
    with pytest.raises(PowerLimitPermissionError, match="CAP_SYS_ADMIN"):
        PowerLimitOptimizer(nvml=nvml)


def test_the_meter_must_measure_the_tuned_gpus(nvml: FakeNvml) -> None:
    other = FakeNvml(v100s(2), FakeClock())
    with (
        Meter(sensors=[NvmlSensor([1], nvml=other)], sample_hz=0) as meter,
        pytest.raises(ConfigError, match=r"does not measure the tuned GPUs \['gpu0'\]"),
    ):
        PowerLimitOptimizer(meter, nvml=nvml)


def test_an_exception_in_a_step_restores(nvml: FakeNvml, meter: Meter) -> None:
    opt = optimizer(nvml, meter, warmup_steps=1, profile_steps=1)
    train(opt, nvml, 5)
    assert nvml.gpus[0].power_limit_w == 200.0
    with pytest.raises(RuntimeError, match="loss is nan"), opt.step():
        raise RuntimeError("loss is nan")
    assert nvml.gpus[0].power_limit_w == 250.0 and opt.phase == "closed"


# -- real processes: SIGTERM, exit without close, crash then `greenml gpu restore` ----------


def _start(mode: str, tmp_path: Path) -> tuple[subprocess.Popen[str], dict[str, str]]:
    env = dict(os.environ)
    env.update(
        GREENML_TEST_FAKE_STATE=str(tmp_path / "fake_gpus.json"),
        GREENML_GPU_STATE=str(tmp_path / "greenml_state.json"),
        GREENML_FAKE_NVML=FACTORY,
        PYTHONPATH=os.pathsep.join([str(REPO / "src"), str(REPO)]),  # this tree's greenml
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.optimize._limit_worker", mode],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("profiling "), line + proc.stderr.read() if proc.stderr else ""
    return proc, env


def _fake_limits(tmp_path: Path) -> dict[str, float]:
    return json.loads((tmp_path / "fake_gpus.json").read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize("mode", ["wait", "handler"])
def test_sigterm_mid_profiling_restores_and_keeps_the_exit(mode: str, tmp_path: Path) -> None:
    proc, _ = _start(mode, tmp_path)
    assert _fake_limits(tmp_path)[UUIDS[0]] < 250.0
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert _fake_limits(tmp_path)[UUIDS[0]] == 250.0
    assert not (tmp_path / "greenml_state.json").exists()
    if mode == "wait":  # the default action: killed by the signal
        assert proc.returncode == -signal.SIGTERM, err
    else:  # the program's own handler ran after ours, with its exit code
        assert proc.returncode == 143 and "own handler ran" in out, err


def test_leaving_without_close_restores_at_exit(tmp_path: Path) -> None:
    proc, _ = _start("exit", tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert _fake_limits(tmp_path)[UUIDS[0]] == 250.0


def test_after_a_crash_greenml_gpu_restore_puts_limits_back(tmp_path: Path) -> None:
    proc, env = _start("crash", tmp_path)
    proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert _fake_limits(tmp_path)[UUIDS[0]] < 250.0  # os._exit: nothing restored
    saved = json.loads((tmp_path / "greenml_state.json").read_text())["gpus"]
    assert saved[UUIDS[0]]["original_limit_w"] == 250.0
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "gpu", "restore", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["restored"] == {UUIDS[0]: 250.0}
    assert _fake_limits(tmp_path)[UUIDS[0]] == 250.0
    assert not (tmp_path / "greenml_state.json").exists()
