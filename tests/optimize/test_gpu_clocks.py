"""Locking GPU graphics clocks (NVML locked clocks, AMD determinism mode) and always
unlocking them: permission checks, the clocks' state file, restore on exit, on SIGTERM
and after a crash, against fakes that follow nvidia-ml-py and AMD SMI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from greenml.errors import ClockPermissionError, ClockUnsupported, ConfigError
from greenml.optimize.gpu_clocks import open_clock_control, restore_clocks_from_state
from greenml.optimize.gpu_state import read_state_at
from tests.fakes.fake_amdsmi import FakeAmdSmi, mi300x
from tests.fakes.fake_nvml_clocks import FakeNvmlClocks
from tests.fakes.fake_pynvml import h100, p100

REPO = Path(__file__).parents[2]


@pytest.fixture(autouse=True)
def _no_visibility_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)


def test_nvml_supported_clocks_lock_and_restore(tmp_path: Path) -> None:
    nvml = FakeNvmlClocks([h100("GPU-a"), h100("GPU-b")])
    state = tmp_path / "clocks.json"
    control = open_clock_control(nvml=nvml, state_file=state)
    gpu = control.get("gpu0")
    assert (gpu.max_mhz, gpu.min_mhz, gpu.current_mhz) == (1980, 210, 1980.0)
    assert control.lock("gpu1", 1000) == 990  # the supported clock just below
    assert nvml.locks == {"GPU-b": (990, 990)}
    assert read_state_at(state, "original_clocks")["GPU-b"]["original_clocks"] == "unlocked"
    assert control.get("gpu1").current_mhz == 990
    assert control.restore() == {"gpu1": "unlocked"}
    assert nvml.locks == {} and not state.exists()
    control.close()


def test_out_of_range_without_root_and_before_volta(tmp_path: Path) -> None:
    control = open_clock_control(nvml=FakeNvmlClocks([h100()], privileged=False),
                                 state_file=tmp_path / "c.json")  # fmt: skip
    with pytest.raises(ConfigError, match="210–1980 MHz"):
        control.lock("gpu0", 3000)
    with pytest.raises(ClockPermissionError, match="nvidia-smi --lock-gpu-clocks"):
        control.check_permission()
    old = p100(errors={"nvmlDeviceSetGpuLockedClocks": "NotSupported"})
    control = open_clock_control(nvml=FakeNvmlClocks([old]), state_file=tmp_path / "c.json")
    with pytest.raises(ClockUnsupported):
        control.lock("gpu0", 1000)


def test_amd_determinism_mode_and_back_to_auto(tmp_path: Path) -> None:
    smi = FakeAmdSmi(mi300x(1))
    control = open_clock_control(amdsmi=smi, state_file=tmp_path / "c.json")
    assert control.vendor == "amd" and control.get("gpu0").supported_mhz == (2100, 1500, 1000, 500)
    assert control.lock("gpu0", 1700) == 1500
    assert (smi.gpus[0].perf_level, smi.gpus[0].gfx_max_mhz) == (
        "AMDSMI_DEV_PERF_LEVEL_DETERMINISM", 1500)
    control.restore()
    assert (smi.gpus[0].perf_level, smi.gpus[0].gfx_max_mhz) == ("AMDSMI_DEV_PERF_LEVEL_AUTO", None)
    with pytest.raises(ClockPermissionError, match="amd-smi"):
        open_clock_control(amdsmi=FakeAmdSmi(mi300x(1), privileged=False),
                           state_file=tmp_path / "c.json").check_permission()  # fmt: skip


def _locking_script(clocks: Path, state: Path, end: str) -> str:
    return f"""
import os, signal, sys, time
from pathlib import Path
from tests.fakes.fake_nvml_clocks import FakeNvmlClocks
from tests.fakes.fake_pynvml import h100
from greenml.optimize.gpu_clocks import open_clock_control
nvml = FakeNvmlClocks([h100("GPU-a")], clock_path=Path({str(clocks)!r}))
control = open_clock_control(nvml=nvml, state_file={str(state)!r})
control.guard()
control.lock("gpu0", 1200)
{end}
"""


def _run(script: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    return subprocess.run([sys.executable, "-c", script], env=env, timeout=60)


@pytest.mark.parametrize(("end", "code"), [("sys.exit(3)", 3),
                                           ("os.kill(os.getpid(), signal.SIGTERM)", -15)])
def test_clocks_are_unlocked_at_exit_and_on_sigterm(tmp_path: Path, end: str, code: int) -> None:
    clocks, state = tmp_path / "gpus.json", tmp_path / "state.json"
    done = _run(_locking_script(clocks, state, end))
    assert done.returncode == code  # the program's own exit status is kept
    assert FakeNvmlClocks([h100("GPU-a")], clock_path=clocks).locks == {}
    assert not state.exists()


def test_clocks_are_unlocked_by_restore_after_a_crash(tmp_path: Path) -> None:
    clocks, state = tmp_path / "gpus.json", tmp_path / "state.json"
    done = _run(_locking_script(clocks, state, "os.kill(os.getpid(), signal.SIGKILL)"))
    assert done.returncode == -signal.SIGKILL
    nvml = FakeNvmlClocks([h100("GPU-a")], clock_path=clocks)
    assert nvml.locks == {"GPU-a": (1200, 1200)}
    restored, missing = restore_clocks_from_state(state, nvml=nvml)
    assert restored == {"GPU-a": "unlocked"} and missing == []
    assert nvml.locks == {} and not state.exists()


def test_a_crashed_amd_lock_is_put_back_to_its_recorded_level(tmp_path: Path) -> None:
    shared, state = tmp_path / "gpus.json", tmp_path / "state.json"
    control = open_clock_control(amdsmi=FakeAmdSmi(mi300x(1), state_path=shared),
                                 state_file=state)  # fmt: skip
    control.lock("gpu0", 1000)  # and the process "dies": nothing restores
    smi = FakeAmdSmi(mi300x(1), state_path=shared)
    assert smi.gpus[0].gfx_max_mhz == 1000
    restored, _ = restore_clocks_from_state(state, nvml=FakeNvmlClocks([]), amdsmi=smi)
    assert list(restored.values()) == ["AMDSMI_DEV_PERF_LEVEL_AUTO"]
    assert smi.gpus[0].perf_level == "AMDSMI_DEV_PERF_LEVEL_AUTO"



def test_cli_lists_locks_and_restore_unlocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from greenml.cli import main

    monkeypatch.setenv("GREENML_FAKE_NVML", "tests.fakes.fake_nvml_clocks:h100s")
    monkeypatch.setenv("GREENML_TEST_FAKE_CLOCKS", str(tmp_path / "gpus.json"))
    monkeypatch.setenv("GREENML_GPU_STATE", str(tmp_path / "limits.json"))

    def gpu(*args: str) -> tuple[int, str, str]:
        code = main(["gpu", *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, _ = gpu("clocks", "--json")
    data = json.loads(out)
    assert data["vendor"] == "nvidia" and data["gpus"][0]["supported_mhz"][0] == 1980
    assert "would lock at 990 MHz" in gpu("lock-clocks", "1000", "--dry-run")[1]
    assert gpu("lock-clocks", "1000", "--gpus", "1")[0] == 0
    assert json.loads((tmp_path / "gpus.json").read_text()) == {"GPU-h100-b": [990, 990]}
    code, _, err = gpu("lock-clocks", "5000")
    assert code == 2 and "210–1980 MHz" in err and "Traceback" not in err
    assert "GPU-h100-b: clocks restored (unlocked)" in gpu("restore")[1]
    assert json.loads((tmp_path / "gpus.json").read_text()) == {}
