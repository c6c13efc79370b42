"""Apple Silicon, Jetson, amd_energy and hwmon power sensors against fakes of their interfaces.

Formats followed: zeus-apple-silicon's AppleEnergyMetrics (mJ, None when absent);
powermetrics ``-f plist`` (one plist per sample, NUL-separated; ``processor.cpu_power``
… in mW) and its text lines (``CPU Power: 1234 mW``); Documentation/hwmon/ina3221.rst
(mV, mA, labels); Documentation/hwmon/amd_energy.rst (µJ, Ecore/Esocket labels); the
tegrastats line format of the Jetson Linux Developer Guide (``VDD_IN 5012mW/5012mW``
on JetPack 5+, ``POM_5V_IN 3392/3392`` on JetPack 4).
"""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.sensors.apple import (
    IOREPORT_UNCERTAINTY,
    AppleSiliconSensor,
    PowermetricsSensor,
    parse_powermetrics,
)
from greenml.measure.sensors.hwmon import HwmonEnergySensor, generic_power_sensor
from greenml.measure.sensors.jetson import (
    JETSON_UNCERTAINTY,
    TegrastatsSensor,
    component_of,
    jetson_sensor,
    parse_tegrastats,
)
from tests.fakes.fake_apple import M2_WATTS, fake_apple
from tests.fakes.fake_sysfs import FakeMachine
from tests.helpers import ManualClock


def test_ioreport_counters_are_cumulative_joules_per_component() -> None:
    clock = ManualClock(0.0)
    sensor = AppleSiliconSensor(module=fake_apple(M2_WATTS, clock))
    assert [(d.key, d.component, d.method) for d in sensor.devices] == [
        ("cpu0", "cpu", COUNTER), ("gpu0", "gpu", COUNTER), ("ane0", "ane", COUNTER),
        ("dram0", "dram", COUNTER),
    ]  # fmt: skip
    assert {d.uncertainty_rel for d in sensor.devices} == {IOREPORT_UNCERTAINTY}
    clock.advance(10.0)
    first = sensor.read_energy_j()
    clock.advance(10.0)
    second = sensor.read_energy_j()
    assert first == pytest.approx({"cpu0": 60.0, "gpu0": 90.0, "ane0": 15.0, "dram0": 5.0})
    assert second["gpu0"] == pytest.approx(180.0)


def test_a_chip_without_a_channel_has_no_such_device() -> None:
    watts = {**M2_WATTS, "dram_mj": None}
    sensor = AppleSiliconSensor(module=fake_apple(watts, ManualClock(0.0)))
    assert "dram0" not in {d.key for d in sensor.devices}


def test_an_ioreport_failure_mid_run_is_a_gap() -> None:
    clock = ManualClock(0.0)
    sensor = AppleSiliconSensor(module=fake_apple(M2_WATTS, clock, fail_after_s=5.0))
    clock.advance(6.0)
    with pytest.raises(SensorError, match="IOReport"):
        sensor.read_energy_j()


def test_no_zeus_apple_silicon_is_unavailable_with_the_reason() -> None:
    class Broken:
        def AppleEnergyMonitor(self) -> None:
            raise OSError("IOReport.dylib not found")

    with pytest.raises(SensorUnavailable, match="IOReport unavailable"):
        AppleSiliconSensor(module=Broken())


def _plist_sample(cpu_mw: float, gpu_mw: float, ane_mw: float) -> bytes:
    sample = {"is_delta": True, "elapsed_ns": 1_000_000_000, "hw_model": "Mac14,2",
              "processor": {"cpu_power": cpu_mw, "cpu_energy": int(cpu_mw),
                            "gpu_power": gpu_mw, "ane_power": ane_mw,
                            "combined_power": cpu_mw + gpu_mw + ane_mw}}  # fmt: skip
    return plistlib.dumps(sample)


def test_powermetrics_plist_and_text_samples_parse_to_watts() -> None:
    assert parse_powermetrics(_plist_sample(1234.0, 560.0, 0.0)) == pytest.approx(
        {"cpu0": 1.234, "gpu0": 0.56, "ane0": 0.0}
    )
    text = (b"**** Processor usage ****\nCPU Power: 1234 mW\nGPU Power: 56 mW\n"
            b"ANE Power: 0 mW\nCombined Power (CPU + GPU + ANE): 1290 mW\n")  # fmt: skip
    assert parse_powermetrics(text) == pytest.approx({"cpu0": 1.234, "gpu0": 0.056, "ane0": 0.0})


def test_powermetrics_stream_keeps_the_latest_and_its_end_is_a_gap() -> None:
    records = [_plist_sample(1000.0, 2000.0, 0.0), b"garbage", _plist_sample(1500.0, 2500.0, 5.0)]
    sensor = PowermetricsSensor(source=None)
    assert {d.method for d in sensor.devices} == {POWER_INTEGRATED}
    for record in records:
        sensor.feed(record)
    assert sensor.read_power_w() == pytest.approx({"cpu0": 1.5, "gpu0": 2.5, "ane0": 0.005})
    sensor.end("it exited")
    with pytest.raises(SensorError, match="powermetrics stopped"):
        sensor.read_power_w()


def test_powermetrics_from_a_nul_separated_stream_thread() -> None:
    sensor = PowermetricsSensor(source=lambda: iter([_plist_sample(800.0, 100.0, 0.0)]))
    assert sensor._thread is not None
    sensor._thread.join(5)
    with pytest.raises(SensorError, match="exited"):  # the fake stream ended
        sensor.read_power_w()


def test_amd_energy_reads_sockets_only_and_survives_a_reload(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path)
    chip = fake.amd_energy(cores=4, socket_uj=10_000_000)
    sensor = HwmonEnergySensor(fake.path("sys/class/hwmon"))
    assert [(d.key, d.method) for d in sensor.devices] == [("cpu0", COUNTER)]
    (chip / "energy5_input").write_text("25000000\n")
    assert sensor.read_energy_j() == {"cpu0": pytest.approx(15.0)}
    (chip / "energy5_input").write_text("2000000\n")  # driver reloaded: restarts near 0
    assert sensor.read_energy_j() == {"cpu0": pytest.approx(17.0)}


def test_jetson_board_is_the_input_rail_and_the_rest_are_metrics(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path, vendor="", model="ARMv8")
    chip = fake.jetson_orin(in_mw=(7000, 3000, 1500))
    sensor = jetson_sensor(fake.root)
    device = sensor.devices[0]
    assert (device.key, device.component, device.method) == ("board0", "board", POWER_INTEGRATED)
    assert device.uncertainty_rel == JETSON_UNCERTAINTY
    assert sensor.read_power_w() == {"board0": pytest.approx(7.0)}
    assert sensor.read_metrics()["board0"] == pytest.approx(
        {"rail_vdd_cpu_gpu_cv_w": 3.0, "rail_vdd_soc_w": 1.5}
    )
    (chip / "curr1_input").unlink()  # the rail vanished mid-run: a gap, not a crash
    with pytest.raises(SensorError):
        sensor.read_power_w()


def test_jetpack4_iio_rails_are_milliwatts(tmp_path: Path) -> None:
    iio = tmp_path / "sys/bus/i2c/drivers/ina3221x/1-0040/iio:device0"
    iio.mkdir(parents=True)
    for n, (name, mw) in enumerate((("POM_5V_IN", 3392), ("POM_5V_GPU", 400), ("POM_5V_CPU", 775))):
        (iio / f"rail_name_{n}").write_text(name + "\n")
        (iio / f"in_power{n}_input").write_text(f"{mw}\n")
    sensor = jetson_sensor(tmp_path)
    assert sensor.read_power_w() == {"board0": pytest.approx(3.392)}


def test_rail_names_map_to_components() -> None:
    assert component_of("VDD_CPU_GPU_CV") == "soc"
    assert component_of("VDD_GPU_SOC") == "gpu"
    assert component_of("VDDQ_VDD2_1V8AO") == "dram"
    assert component_of("VIN_SYS_5V0") == "board"


def test_tegrastats_lines_of_both_jetpacks() -> None:
    orin = (b"11-27-2026 14:00:00 RAM 2448/7620MB (lfb 3x4MB) CPU [12%@1190,8%@1190] "
            b"GR3D_FREQ 0% cpu@47.5C VDD_IN 5012mW/4987mW VDD_CPU_GPU_CV 1200mW/1150mW "
            b"VDD_SOC 1400mW/1390mW")  # fmt: skip
    nano = b"RAM 1520/3964MB CPU [5%@102,off,off,3%@102] POM_5V_IN 3392/3392 POM_5V_GPU 0/0"
    assert parse_tegrastats(orin) == {"board0": pytest.approx(5.012)}
    assert parse_tegrastats(nano) == {"board0": pytest.approx(3.392)}
    assert parse_tegrastats(b"RAM 1520/3964MB") == {}
    sensor = TegrastatsSensor(source=None)
    sensor.feed(orin)
    assert sensor.read_power_w() == {"board0": pytest.approx(5.012)}


def test_generic_hwmon_power_channels_are_microwatts(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path)
    fake.hwmon("ina226", {"power1_input": 12_500_000, "power1_label": "VIN"})
    sensor = generic_power_sensor(fake.path("sys/class/hwmon"))
    assert [(d.key, d.component, d.method) for d in sensor.devices] == [
        ("power0", "board", POWER_INTEGRATED)
    ]
    assert sensor.read_power_w() == {"power0": pytest.approx(12.5)}
    with pytest.raises(SensorUnavailable):
        generic_power_sensor(tmp_path / "nowhere")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=5))
def test_any_tool_output_is_a_sample_or_skipped_never_an_error(records: list[bytes]) -> None:
    for sensor in (PowermetricsSensor(source=None), TegrastatsSensor(source=None)):
        for record in records:
            sensor.feed(record)
        assert all(isinstance(w, float) for w in sensor.read_power_w().values())


def test_an_arm_board_with_a_power_monitor_is_measured_whole(tmp_path: Path) -> None:
    from greenml.measure.sensors.discover import discover_platform_sensors

    fake = FakeMachine(tmp_path, vendor="", model="Cortex-A76")
    fake.hwmon("amdgpu", {"power1_input": 50_000_000})  # a GPU's power is not the board's
    fake.hwmon("ina219", {"power1_input": 4_200_000})
    found = discover_platform_sensors(fake.root, arch="aarch64")
    assert found is not None
    (board,), notes = found
    assert board.read_power_w() == {"power0": pytest.approx(4.2)} and "inside it" in notes[0]
    assert discover_platform_sensors(fake.root, arch="x86_64") is None  # a server: not a board


def test_a_real_tool_process_is_read_and_stopped_on_close() -> None:
    import sys
    import time

    from greenml.measure.sensors.stream import process_records

    script = ("import sys, time\n"
              "while True:\n"
              "    print('RAM 1/2MB VDD_IN 4200mW/4100mW', flush=True)\n"
              "    time.sleep(0.05)\n")  # fmt: skip
    sensor = TegrastatsSensor(source=lambda: process_records([sys.executable, "-c", script], b"\n"))
    deadline = time.monotonic() + 10
    while not sensor.read_power_w() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sensor.read_power_w() == {"board0": pytest.approx(4.2)}
    sensor.close()
    assert sensor._thread is not None
    sensor._thread.join(5)
    with pytest.raises(SensorError, match="tegrastats stopped"):
        sensor.read_power_w()


def test_an_amd_cpu_without_counters_uses_its_tdp_from_the_table(tmp_path: Path) -> None:
    from greenml.measure.sensors.cpu_model import TDP_MODEL_UNCERTAINTY
    from greenml.measure.sensors.discover import discover_cpu_sensors

    fake = FakeMachine(tmp_path, model="AMD EPYC 9654 96-Core Processor")  # no powercap, no hwmon
    sensors, notes = discover_cpu_sensors(root=fake.root)
    cpu = sensors[0].devices[0]
    assert (cpu.key, cpu.method) == ("cpu0", "estimated")
    assert cpu.uncertainty_rel == TDP_MODEL_UNCERTAINTY
    assert '360 W × 1 socket(s) for "AMD EPYC 9654"' in cpu.note
    assert any("amd_energy not used" in n for n in notes)
    for sensor in sensors:
        sensor.close()


def test_a_jetson_whose_rails_cannot_be_read_falls_back_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from greenml.measure.sensors import discover

    fake = FakeMachine(tmp_path, vendor="", model="ARMv8", rapl_flag=False)
    release = fake.path("etc/nv_tegra_release")
    release.parent.mkdir(parents=True)
    release.write_text("# R36 (release)\n")  # a Jetson, but no INA3221 exposed
    monkeypatch.setattr(discover.shutil, "which", lambda name: None)  # and no tegrastats
    sensors, notes = discover.discover_cpu_sensors(root=fake.root)
    assert [d.method for s in sensors for d in s.devices] == ["estimated", "estimated"]
    assert notes[0].startswith("Jetson INA3221 rails not used: no INA3221 rail")
    for sensor in sensors:
        sensor.close()
