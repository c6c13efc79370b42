"""NvmlSensor against a fake NVML whose GPUs follow power traces on a fake clock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.sensors.nvml import MIG_NOTE, NO_COUNTER_NOTE, NvmlSensor, nvml_environment
from tests.fakes.fake_pynvml import FakeClock, FakeNvml, Phase, a100, h100, p100

# Idle until t=1005, a training step at 300 W until 1012.5, then 150 W.
TRACE = (
    Phase(0.0, 60.0),
    Phase(
        1005.0, 300.0, utilization=0.9, sm_activity=0.5, memory_utilization=0.4, sm_occupancy=0.3
    ),
    Phase(1012.5, 150.0, utilization=0.6, sm_activity=0.2, memory_utilization=0.1),
)


@pytest.fixture(autouse=True)
def _no_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0)


def two_gpus(clock: FakeClock, **second: object) -> FakeNvml:
    return FakeNvml(
        [h100("GPU-aaaa-1111", trace=TRACE), a100("GPU-bbbb-2222", trace=TRACE, **second)],
        clock,
    )


def test_counter_energy_is_trace_integral(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=FakeNvml([h100(trace=TRACE)], clock))
    (device,) = sensor.devices
    assert (device.key, device.component, device.method) == ("gpu0", "gpu", COUNTER)
    assert device.name == "NVIDIA H100 80GB HBM3"
    assert device.uncertainty_rel == 0.05 and device.note == ""
    assert sensor.read_energy_j()["gpu0"] == pytest.approx(0.0, abs=1e-3)
    clock.advance(3.0)
    e1 = sensor.read_energy_j()["gpu0"]
    clock.advance(17.0)
    e2 = sensor.read_energy_j()["gpu0"]
    assert e1 == pytest.approx(3 * 60.0, abs=2e-3)
    # 1003..1020: 2 s at 60 W, 7.5 s at 300 W, 7.5 s at 150 W.
    assert e2 - e1 == pytest.approx(2 * 60.0 + 7.5 * 300.0 + 7.5 * 150.0, abs=2e-3)
    assert sensor.read_power_w() == {"gpu0": 150.0}


def test_old_gpu_falls_back_to_power_integration(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=FakeNvml([h100(trace=TRACE), p100(trace=TRACE)], clock))
    old = sensor.devices[1]
    assert (old.key, old.method, old.note) == ("gpu1", POWER_INTEGRATED, NO_COUNTER_NOTE)
    assert old.uncertainty_rel == 0.05
    clock.advance(6.0)
    assert set(sensor.read_energy_j()) == {"gpu0"}
    assert sensor.read_power_w() == {"gpu0": 300.0, "gpu1": 300.0}


def test_p100_alone_has_no_counter_readings(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=FakeNvml([p100()], clock))
    assert sensor.read_energy_j() == {}
    assert sensor.read_power_w() == {"gpu0": 60.0}


def test_cuda_visible_devices_index(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    sensor = NvmlSensor(nvml=two_gpus(clock))
    assert [(d.key, d.name) for d in sensor.devices] == [("gpu0", "NVIDIA A100-SXM4-80GB")]


def test_cuda_visible_devices_uuid_and_prefix(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb-2222, GPU-aaaa")
    sensor = NvmlSensor(nvml=two_gpus(clock))
    names = [(d.key, d.name) for d in sensor.devices]
    assert names == [("gpu0", "NVIDIA A100-SXM4-80GB"), ("gpu1", "NVIDIA H100 80GB HBM3")]


def test_cuda_visible_devices_stops_at_invalid_entry(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,7,0")
    assert len(NvmlSensor(nvml=two_gpus(clock)).devices) == 1


@pytest.mark.parametrize("value", ["", "-1", "GPU-nope"])
def test_no_visible_gpu_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock, value: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    fake = two_gpus(clock)
    with pytest.raises(SensorUnavailable, match="no GPU visible"):
        NvmlSensor(nvml=fake)
    assert fake.init_count == 0  # NVML shut down again


def test_mig_instance_entry_is_refused(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-4f0d3a1c-0b5e-5c1a-9d3e-2a7f1b9c8e11")
    fake = two_gpus(clock, mig_mode=1)
    with pytest.raises(SensorUnavailable, match=r"per physical GPU.*whole GPU"):
        NvmlSensor(nvml=fake)
    assert fake.init_count == 0


def test_mig_mode_gpu_is_measured_with_note(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=two_gpus(clock, mig_mode=1))
    plain, mig = sensor.devices
    assert plain.note == ""
    assert (mig.method, mig.note) == (COUNTER, MIG_NOTE)


def test_indices_are_visible_ordinals(clock: FakeClock) -> None:
    sensor = NvmlSensor([1], nvml=two_gpus(clock))
    assert [d.key for d in sensor.devices] == ["gpu1"]
    with pytest.raises(SensorUnavailable, match="GPU index 5"):
        NvmlSensor([5], nvml=two_gpus(clock))


def test_lost_gpu_is_left_out_and_not_asked_again(clock: FakeClock) -> None:
    fake = two_gpus(clock, lost_at_s=1010.0)
    sensor = NvmlSensor(nvml=fake)
    clock.advance(6.0)
    assert set(sensor.read_power_w()) == {"gpu0", "gpu1"}
    clock.advance(6.0)
    assert sensor.read_power_w() == {"gpu0": 300.0}
    assert set(sensor.read_energy_j()) == {"gpu0"}
    assert set(sensor.read_metrics()) == {"gpu0"}
    calls = fake.calls["nvmlDeviceGetPowerUsage"]
    clock.advance(1.0)
    assert sensor.read_power_w() == {"gpu0": 150.0}
    assert fake.calls["nvmlDeviceGetPowerUsage"] == calls + 1


def test_all_gpus_lost_raises_sensor_error(clock: FakeClock) -> None:
    fake = FakeNvml([h100(lost_at_s=1001.0), a100(lost_at_s=1001.0)], clock)
    sensor = NvmlSensor(nvml=fake)
    clock.advance(2.0)
    for read in (sensor.read_power_w, sensor.read_energy_j, sensor.read_metrics):
        with pytest.raises(SensorError, match="lost"):
            read()


def test_transient_error_is_a_gap_then_recovers(clock: FakeClock) -> None:
    fake = FakeNvml([h100(trace=TRACE)], clock)
    sensor = NvmlSensor(nvml=fake)
    fake.gpus[0].errors["nvmlDeviceGetPowerUsage"] = "Unknown"
    with pytest.raises(SensorError, match="Unknown Error"):
        sensor.read_power_w()
    del fake.gpus[0].errors["nvmlDeviceGetPowerUsage"]
    assert sensor.read_power_w() == {"gpu0": 60.0}


def test_sm_activity_through_gpm_on_hopper(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=FakeNvml([h100(trace=TRACE), a100(), p100()], clock))
    assert [sensor.has_sm_activity(k) for k in ("gpu0", "gpu1", "gpu2")] == [True, False, False]
    clock.advance(3.0)
    first = sensor.read_metrics()
    assert "sm_activity" not in first["gpu0"]  # no previous GPM sample yet
    clock.advance(5.0)
    second = sensor.read_metrics()
    # 1003..1008: 2 s idle, 3 s at 50 % SMs busy / 30 % occupancy.
    assert second["gpu0"]["sm_activity"] == pytest.approx(0.3)
    assert second["gpu0"]["sm_occupancy"] == pytest.approx(0.18)
    clock.advance(9.5)  # 1008..1017.5: 4.5 s at 0.5, 5 s at 0.2
    assert sensor.read_metrics()["gpu0"]["sm_activity"] == pytest.approx(3.25 / 9.5)
    assert all("sm_activity" not in second[k] for k in ("gpu1", "gpu2"))


def test_metrics_values_and_units(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=FakeNvml([h100(trace=TRACE, memory_used_bytes=40 * 2**30)], clock))
    clock.advance(6.0)
    metrics = sensor.read_metrics()["gpu0"]
    assert metrics == {
        "utilization": 0.9,
        "memory_utilization": 0.4,
        "memory_used_bytes": 40 * 2**30,
        "memory_total_bytes": 80 * 2**30,
        "sm_clock_mhz": 1980.0,
        "power_limit_w": 700.0,
    }


def test_unsupported_metric_is_absent_and_not_retried(clock: FakeClock) -> None:
    fake = FakeNvml([h100(errors={"nvmlDeviceGetClockInfo": "NotSupported"}), p100()], clock)
    sensor = NvmlSensor(nvml=fake)
    for _ in range(3):
        clock.advance(1.0)
        metrics = sensor.read_metrics()
    assert "sm_clock_mhz" not in metrics["gpu0"] and "utilization" in metrics["gpu0"]
    assert fake.calls["nvmlDeviceGetClockInfo"] == 1 + 3  # gpu0 once only, gpu1 every read
    assert fake.calls["nvmlGpmQueryDeviceSupport"] == 2
    assert fake.calls["nvmlGpmSampleGet"] == 3  # only the H100


def test_power_limits_in_watts(clock: FakeClock) -> None:
    sensor = NvmlSensor(nvml=FakeNvml([h100(power_limit_w=500.0), p100()], clock))
    assert sensor.power_limit_constraints_w("gpu0") == (200.0, 700.0)
    assert sensor.power_limit_w("gpu0") == 500.0
    assert sensor.default_power_limit_w("gpu0") == 700.0
    assert sensor.power_limit_constraints_w("gpu1") == (125.0, 250.0)
    with pytest.raises(SensorError, match="gpu7"):
        sensor.power_limit_w("gpu7")


def test_library_not_found_is_unavailable() -> None:
    with pytest.raises(SensorUnavailable, match="NVML Shared Library Not Found"):
        NvmlSensor(nvml=FakeNvml([h100()], library_found=False))


def test_missing_bindings_are_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import greenml.measure.sensors.nvml as nvml_module

    monkeypatch.setattr(nvml_module, "_DRIVER_MARKERS", (str(tmp_path),))  # a driver is "there"
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with pytest.raises(SensorUnavailable, match="nvidia-ml-py"):
        NvmlSensor()
    assert nvml_environment() == {}


def test_no_driver_is_unavailable_without_importing_pynvml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import greenml.measure.sensors.nvml as nvml_module

    monkeypatch.setattr(nvml_module, "_DRIVER_MARKERS", (str(tmp_path / "absent"),))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)
    with pytest.raises(SensorUnavailable, match="no NVIDIA driver"):
        NvmlSensor()
    assert "pynvml" not in sys.modules


def test_no_gpu_is_unavailable() -> None:
    with pytest.raises(SensorUnavailable, match="no GPU visible"):
        NvmlSensor(nvml=FakeNvml([]))


def test_close_frees_gpm_samples_and_shuts_down_once(clock: FakeClock) -> None:
    fake = FakeNvml([h100(), h100("GPU-h100-0001")], clock)
    sensor = NvmlSensor(nvml=fake)
    assert fake.live_samples == 4
    sensor.close()
    sensor.close()
    assert (fake.live_samples, fake.init_count, fake.shutdown_calls) == (0, 0, 1)
    with pytest.raises(SensorError):
        sensor.read_power_w()


def test_fake_refuses_calls_before_init() -> None:
    fake = FakeNvml([h100()])
    with pytest.raises(fake.NVMLError_Uninitialized):
        fake.nvmlDeviceGetCount()


def test_byte_names_are_decoded(clock: FakeClock) -> None:
    class OldBindings(FakeNvml):
        def nvmlDeviceGetName(self, h: object) -> bytes:  # type: ignore[override]
            return super().nvmlDeviceGetName(h).encode()  # type: ignore[arg-type]

    assert NvmlSensor(nvml=OldBindings([a100()], clock)).devices[0].name == "NVIDIA A100-SXM4-80GB"


def test_nvml_environment(monkeypatch: pytest.MonkeyPatch, clock: FakeClock) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # environment lists every physical GPU
    fake = two_gpus(clock)
    env = nvml_environment(fake)
    assert env["driver_version"] == "550.54.15"
    assert env["cuda_driver_version"] == "12.4"
    assert env["nvml_version"] == "12.550.54.15"
    assert env["gpus"][1] == {
        "index": 1,
        "name": "NVIDIA A100-SXM4-80GB",
        "uuid": "GPU-bbbb-2222",
        "memory_total_bytes": 80 * 2**30,
        "power_limit_w": 400.0,
    }
    assert len(env["gpus"]) == 2 and fake.init_count == 0
    assert nvml_environment(FakeNvml([], cuda=11080))["cuda_driver_version"] == "11.8"
    assert nvml_environment(FakeNvml([h100()], library_found=False)) == {}


def test_real_pynvml_opens_or_is_unavailable() -> None:
    pytest.importorskip("pynvml")
    try:
        sensor = NvmlSensor()
    except SensorUnavailable:
        assert isinstance(nvml_environment(), dict)  # {} or the GPUs, never an exception
        return
    try:
        assert sensor.devices and all(d.component == "gpu" for d in sensor.devices)
        assert all(w > 0 for w in sensor.read_power_w().values())
        assert all(j >= 0 for j in sensor.read_energy_j().values())
        sensor.read_metrics()
    finally:
        sensor.close()


def test_pynvml_is_imported_lazily() -> None:
    code = "import sys, greenml.measure.sensors.nvml; print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_h100_measured_without_its_counter_says_the_measured_band() -> None:
    from greenml.measure.sensors.nvml import BURSTY_POWER_UNCERTAINTY_REL, integrated_band

    assert integrated_band("NVIDIA H100 80GB HBM3") == BURSTY_POWER_UNCERTAINTY_REL == 0.12
    assert integrated_band("NVIDIA GH200 480GB") == 0.12
    assert integrated_band("Tesla P100-PCIE-16GB") == 0.05  # no measurement of its own here
