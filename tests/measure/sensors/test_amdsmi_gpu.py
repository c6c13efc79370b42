"""AmdGpuSensor against a fake amdsmi that follows AMD SMI's documented behaviour.

Documentation followed (see tests/fakes/fake_amdsmi.py): the energy accumulator is a
uint64 count × ``counter_resolution`` µJ; power fields in W or ``"N/A"``; power cap in
µW; energy "not supported on virtual machine guest".
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.amdsmi_gpu import (
    AMD_GPU_UNCERTAINTY_REL,
    NO_COUNTER_NOTE,
    AmdGpuSensor,
)
from tests.fakes.fake_amdsmi import RESOLUTION_UJ, FakeAmdSmi, mi300x
from tests.helpers import ManualClock


@pytest.fixture(autouse=True)
def _no_visibility_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)


def test_energy_is_the_counter_times_its_resolution() -> None:
    clock = ManualClock(0.0)
    smi = FakeAmdSmi(mi300x(2, power_w=500.0), clock)
    sensor = AmdGpuSensor(amdsmi=smi)
    assert [(d.key, d.method, d.uncertainty_rel) for d in sensor.devices] == [
        ("gpu0", COUNTER, AMD_GPU_UNCERTAINTY_REL), ("gpu1", COUNTER, AMD_GPU_UNCERTAINTY_REL),
    ]  # fmt: skip
    assert sensor.devices[0].name == "AMD Instinct MI300X"
    clock.advance(10.0)
    energy = sensor.read_energy_j()
    assert energy["gpu0"] == pytest.approx(5000.0, abs=RESOLUTION_UJ / 1e6)
    assert sensor.read_power_w() == {"gpu0": 500.0, "gpu1": 500.0}
    sensor.close()
    assert smi.initialized == 0


def test_metrics_convert_percent_megabytes_and_microwatts() -> None:
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1)))
    metrics = sensor.read_metrics()["gpu0"]
    assert metrics["utilization"] == pytest.approx(0.87)
    assert metrics["memory_used_bytes"] == 1024 * 2**20
    assert metrics["power_limit_w"] == pytest.approx(750.0)


def test_older_bindings_name_the_count_power() -> None:
    clock = ManualClock(0.0)
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, legacy_names=True), clock))
    clock.advance(2.0)
    assert sensor.read_energy_j()["gpu0"] == pytest.approx(1000.0, abs=1e-4)


def test_a_counter_that_wraps_past_2_64_keeps_counting() -> None:
    clock = ManualClock(0.0)
    start = 2**64 - 1000  # 1000 counts (15 mJ) before the uint64 wraps
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, start_count=start), clock))
    clock.advance(1.0)
    first = sensor.read_energy_j()["gpu0"]
    clock.advance(1.0)
    assert sensor.read_energy_j()["gpu0"] == pytest.approx(1000.0, abs=1e-4)
    assert first == pytest.approx(500.0, abs=1e-4)


def test_a_counter_that_goes_back_is_counted_on_not_negative() -> None:
    clock = ManualClock(0.0)
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, rewind_at_s=5.0), clock))
    clock.advance(4.0)
    before = sensor.read_energy_j()["gpu0"]
    clock.advance(2.0)  # restarted at 5 s (driver reload): 1 s counted since
    after = sensor.read_energy_j()["gpu0"]
    assert before == pytest.approx(2000.0, abs=1e-3)
    assert after == pytest.approx(2500.0, abs=1e-3)  # the 4→5 s second is lost, never negative


def test_a_vm_guest_without_counter_is_power_integrated_and_labelled() -> None:
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, vm_guest=True)))
    device = sensor.devices[0]
    assert device.method == POWER_INTEGRATED and NO_COUNTER_NOTE in device.note
    assert sensor.read_energy_j() == {}
    assert sensor.read_power_w() == {"gpu0": 500.0}


def test_power_reported_as_na_is_a_gap() -> None:
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, power_na=True)))
    with pytest.raises(SensorError):
        sensor.read_power_w()


def test_compute_partitions_are_labelled_like_mig() -> None:
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, partition="CPX")))
    assert "compute partition CPX" in sensor.devices[0].note
    assert "whole physical GPU" in sensor.devices[0].note


def test_hip_visible_devices_orders_the_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = mi300x(3)
    gpus[1].name, gpus[2].name = "AMD Instinct MI250X", "AMD Instinct MI210"
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "2,0")
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(gpus))
    assert [d.name for d in sensor.devices] == ["AMD Instinct MI210", "AMD Instinct MI300X"]


def test_rocr_selects_first_then_hip_indexes_what_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = mi300x(3)
    for i, g in enumerate(gpus):
        g.name = f"GPU {i}"
    monkeypatch.setenv("ROCR_VISIBLE_DEVICES", f"{gpus[2].uuid[:8]},1")  # by UUID prefix
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1")
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(gpus))
    assert [d.name for d in sensor.devices] == ["GPU 1"]


def test_an_invalid_entry_ends_the_list_and_empty_means_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "1,7,0")
    assert len(AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(2))).devices) == 1
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "")
    with pytest.raises(SensorUnavailable, match="HIP_VISIBLE_DEVICES is empty"):
        AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(2)))


def test_a_gpu_that_disappears_is_a_gap_and_the_others_go_on() -> None:
    clock = ManualClock(0.0)
    gpus = mi300x(2)
    gpus[1].lost_at_s = 3.0
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(gpus, clock))
    clock.advance(5.0)
    assert set(sensor.read_energy_j()) == {"gpu0"}
    assert set(sensor.read_power_w()) == {"gpu0"}


def test_a_meter_window_over_amd_gpus_is_a_counter_record() -> None:
    clock = ManualClock(0.0)
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(2, power_w=400.0), clock))
    meter = Meter(sensors=[sensor], sample_hz=0, clock=clock, wall_clock=lambda: 1.7e9)
    meter.begin_window("train")
    for _ in range(10):
        clock.advance(1.0)
        meter.sample_now()
    m = meter.end_window("train")
    gpu = m.components["gpu"]
    assert gpu.method == COUNTER
    assert m.total_j == pytest.approx(8000.0, abs=1e-3)
    assert gpu.devices["gpu0"].uncertainty_rel == AMD_GPU_UNCERTAINTY_REL
    meter.close()


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="0123456789,- GPUabcdef", max_size=30))
def test_any_visibility_value_selects_gpus_or_says_none_are_visible(value: str) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIP_VISIBLE_DEVICES", value)
        try:
            sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(3)))
        except SensorUnavailable:
            return
        keys = [d.key for d in sensor.devices]
        assert keys == [f"gpu{i}" for i in range(len(keys))] and 1 <= len(keys) <= 3


def test_an_mi200_reports_average_power_only() -> None:
    sensor = AmdGpuSensor(amdsmi=FakeAmdSmi(mi300x(1, mi200=True, power_w=420.0)))
    assert sensor.read_power_w() == {"gpu0": 420.0}  # not UINT32_MAX watts
