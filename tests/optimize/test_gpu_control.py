"""GpuControl against the fake NVML: ranges, privileges, the state file, restore."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.errors import (
    ConfigError,
    PowerLimitPermissionError,
    PowerLimitUnsupported,
    SensorUnavailable,
)
from greenml.optimize.gpu_control import GpuControl, load_nvml
from greenml.optimize.gpu_restore import restore_from_state
from greenml.optimize.gpu_state import default_state_file, read_state
from tests.fakes.fake_pynvml import FakeClock, FakeNvml, h100, v100
from tests.optimize.fake_gpus import UUIDS, v100s


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("GREENML_FAKE_NVML", raising=False)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state" / "gpu_power_limits.json"


class WatchingNvml(FakeNvml):
    """Notes what the state file held at the moment of each set."""

    def __init__(self, *args: object, watch: Path, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.watch = watch
        self.seen_at_set: list[dict[str, dict[str, object]]] = []

    def nvmlDeviceSetPowerManagementLimit(self, h: object, limit_mw: int) -> None:
        self.seen_at_set.append(read_state(self.watch))
        super().nvmlDeviceSetPowerManagementLimit(h, limit_mw)  # type: ignore[arg-type]


def test_limits_report_current_default_and_allowed_range(state: Path) -> None:
    nvml = FakeNvml([v100(UUIDS[0]), h100("GPU-h100-1", power_limit_w=500.0)], FakeClock())
    control = GpuControl(nvml=nvml, state_file=state)
    first, second = control.limits()
    assert (first.key, first.uuid, first.limit_w, first.min_w, first.max_w) == (
        "gpu0", UUIDS[0], 250.0, 100.0, 250.0,
    )  # fmt: skip
    assert (second.limit_w, second.default_w, second.allowed) == (500.0, 700.0, "200–700 W")
    control.close()
    assert nvml.init_count == 0


def test_a_limit_outside_the_range_names_the_range(state: Path) -> None:
    control = GpuControl(nvml=FakeNvml([v100(UUIDS[0])], FakeClock()), state_file=state)
    range_named = r"300 W is outside the allowed range of gpu0 \(Tesla V100-PCIE-32GB\): 100–250 W"
    with pytest.raises(ConfigError, match=range_named):
        control.set_limit("gpu0", 300.0)
    with pytest.raises(ConfigError, match="100–250 W"):
        control.set_all(99.0)
    assert not state.exists()  # nothing was changed, so nothing was saved


def test_the_original_is_saved_before_the_first_change(state: Path) -> None:
    nvml = WatchingNvml(v100s(2), FakeClock(), watch=state)
    control = GpuControl(nvml=nvml, state_file=state)
    control.set_limit("gpu1", 175.0)
    control.set_limit("gpu1", 150.0)
    assert list(nvml.seen_at_set[0]) == [UUIDS[1]]  # in the file when NVML was first called
    entry = read_state(state)[UUIDS[1]]
    assert entry["original_limit_w"] == 250.0 and entry["index"] == 1
    assert entry["saved_at"].endswith("+00:00")  # timezone-aware UTC
    assert nvml.gpus[1].power_limit_w == 150.0 and nvml.gpus[0].power_limit_w == 250.0
    assert control.restore() == {"gpu1": 250.0}
    assert nvml.gpus[1].power_limit_w == 250.0
    assert not state.exists()  # nothing left to restore


def test_an_earlier_unrestored_original_is_kept(state: Path) -> None:
    """After a crash the GPU sits at the changed limit: the file knows the original."""
    nvml = FakeNvml(v100s(1), FakeClock())
    crashed = GpuControl(nvml=nvml, state_file=state)
    crashed.set_limit("gpu0", 150.0)  # then the process dies without restoring
    again = GpuControl(nvml=nvml, state_file=state)
    again.set_limit("gpu0", 200.0)
    assert read_state(state)[UUIDS[0]]["original_limit_w"] == 250.0
    assert again.restore() == {"gpu0": 250.0}
    assert nvml.gpus[0].power_limit_w == 250.0


def test_without_privileges_the_message_says_what_is_needed(state: Path) -> None:
    control = GpuControl(nvml=FakeNvml(v100s(1), FakeClock(), privileged=False), state_file=state)
    with pytest.raises(PowerLimitPermissionError) as info:
        control.check_permission()
    message = str(info.value)
    for needed in ("root", "CAP_SYS_ADMIN", f"sudo nvidia-smi -i {UUIDS[0]} -pl", "--dry-run"):
        assert needed in message
    assert "Insufficient Permissions" in message  # NVML's own words too


def test_unsupported_gpu_says_so(state: Path) -> None:
    spec = v100(UUIDS[0], errors={"nvmlDeviceSetPowerManagementLimit": "NotSupported"})
    control = GpuControl(nvml=FakeNvml([spec], FakeClock()), state_file=state)
    with pytest.raises(PowerLimitUnsupported, match="does not allow setting its power limit"):
        control.set_limit("gpu0", 200.0)


def test_restore_from_state_after_a_crash_keeps_unknown_gpus(state: Path) -> None:
    nvml = FakeNvml(v100s(2), FakeClock())
    control = GpuControl(nvml=nvml, state_file=state)
    control.set_all(125.0)
    data = json.loads(state.read_text())
    data["gpus"]["GPU-elsewhere"] = {"original_limit_w": 300.0, "name": "Tesla V100-SXM2"}
    state.write_text(json.dumps(data))
    result = restore_from_state(state, nvml=FakeNvml(nvml.gpus, FakeClock()))
    assert result.restored == {UUIDS[0]: 250.0, UUIDS[1]: 250.0}
    assert result.missing == ["GPU-elsewhere"]
    assert [g.power_limit_w for g in nvml.gpus] == [250.0, 250.0]
    assert list(read_state(state)) == ["GPU-elsewhere"]


def test_a_broken_state_file_is_a_config_error(state: Path) -> None:
    state.parent.mkdir(parents=True)
    state.write_text('{"gpus": {"GPU-x": {}}}')
    with pytest.raises(ConfigError, match="not a greenml GPU state file"):
        restore_from_state(state, nvml=FakeNvml(v100s(1), FakeClock()))
    assert restore_from_state(state.with_name("none.json")).restored == {}


def test_state_file_location_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GREENML_GPU_STATE", str(tmp_path / "mine.json"))
    assert default_state_file() == tmp_path / "mine.json"
    monkeypatch.delenv("GREENML_GPU_STATE")
    assert default_state_file().name == "gpu_power_limits.json"


def test_fake_nvml_hook_and_bad_index(monkeypatch: pytest.MonkeyPatch, state: Path) -> None:
    monkeypatch.setenv("GREENML_FAKE_NVML", "tests.optimize.fake_gpus:nvml")
    monkeypatch.setenv("GREENML_TEST_FAKE_STATE", str(state.with_name("fake.json")))
    assert isinstance(load_nvml(), FakeNvml)
    with pytest.raises(ConfigError, match="GPU index 5 requested but 2 GPU"):
        GpuControl([5], state_file=state)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(SensorUnavailable, match="CUDA_VISIBLE_DEVICES is empty"):
        GpuControl(state_file=state)


def test_restoring_inside_the_lock_does_not_wait_for_itself(state: Path) -> None:
    """A SIGTERM handler may restore while the main thread holds the state lock."""
    from greenml.optimize.gpu_state import locked

    nvml = FakeNvml(v100s(1), FakeClock())
    control = GpuControl(nvml=nvml, state_file=state)
    control.set_limit("gpu0", 150.0)
    with locked(state):
        assert control.restore() == {"gpu0": 250.0}
    assert nvml.gpus[0].power_limit_w == 250.0 and not state.exists()
