"""RaplSensor against a fake powercap tree laid out like /sys/class/powercap."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.sensors import rapl
from greenml.measure.sensors.cpu_model import CpuModelSensor, DramModelSensor
from greenml.measure.sensors.discover import discover_cpu_sensors
from greenml.measure.sensors.rapl import RaplSensor

MAX_UJ = 262_143_328_850  # a real package max_energy_range_uj


class FakePowercap:
    """A powercap tree: zones are directories with name/energy_uj/max_energy_range_uj."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "intel-rapl").mkdir(parents=True)
        (root / "intel-rapl" / "enabled").write_text("1\n")

    def zone(self, rel: str, name: str, energy_uj: int = 0, max_uj: int = MAX_UJ) -> Path:
        path = self.root / rel
        path.mkdir(parents=True)
        (path / "name").write_text(name + "\n")
        (path / "energy_uj").write_text(f"{energy_uj}\n")
        (path / "max_energy_range_uj").write_text(f"{max_uj}\n")
        (path / "enabled").write_text("1\n")
        return path

    def set(self, rel: str, energy_uj: int) -> None:
        (self.root / rel / "energy_uj").write_text(f"{energy_uj}\n")


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def intel(tmp_path: Path) -> FakePowercap:
    """Two-socket Intel server: package + core + dram per socket, psys, and MMIO."""
    fake = FakePowercap(tmp_path / "powercap")
    fake.zone("intel-rapl:0", "package-0", 1_000_000)
    fake.zone("intel-rapl:0/intel-rapl:0:0", "core", 500_000)
    fake.zone("intel-rapl:0/intel-rapl:0:1", "dram", 200_000, max_uj=65_532_610_987)
    fake.zone("intel-rapl:1", "package-1", 3_000_000)
    fake.zone("intel-rapl:1/intel-rapl:1:0", "core", 0)
    fake.zone("intel-rapl:1/intel-rapl:1:1", "dram", 0, max_uj=65_532_610_987)
    fake.zone("intel-rapl:2", "psys", 9_000_000)
    fake.zone("intel-rapl-mmio:0", "package-0", 1_000_000)
    return fake


def test_discovers_packages_and_dram_only(intel: FakePowercap) -> None:
    sensor = RaplSensor(intel.root)
    devices = {d.key: d for d in sensor.devices}
    assert list(devices) == ["cpu0", "dram0", "cpu1", "dram1"]
    assert devices["cpu0"].component == "cpu" and devices["dram1"].component == "dram"
    assert all(d.method == "counter" and d.has_counter for d in devices.values())
    assert devices["cpu0"].uncertainty_rel == 0.10
    assert devices["dram0"].uncertainty_rel == 0.15
    assert "package-1" in devices["cpu1"].name


def test_energy_is_cumulative_joules_since_construction(intel: FakePowercap) -> None:
    sensor = RaplSensor(intel.root)
    assert sensor.read_energy_j() == {"cpu0": 0.0, "dram0": 0.0, "cpu1": 0.0, "dram1": 0.0}
    intel.set("intel-rapl:0", 1_000_000 + 2_500_000)
    intel.set("intel-rapl:0/intel-rapl:0:0", 9_999_999)  # core: inside the package, ignored
    intel.set("intel-rapl:0/intel-rapl:0:1", 200_000 + 750_000)
    intel.set("intel-rapl:2", 99_000_000)  # psys: ignored
    intel.set("intel-rapl-mmio:0", 99_000_000)  # MMIO duplicate: ignored
    energy = sensor.read_energy_j()
    assert energy["cpu0"] == pytest.approx(2.5)
    assert energy["dram0"] == pytest.approx(0.75)
    assert energy["cpu1"] == 0.0


def test_wrap_around_adds_the_range(tmp_path: Path) -> None:
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 900, max_uj=999)
    sensor = RaplSensor(fake.root)
    fake.set("intel-rapl:0", 100)  # wrapped: 900 → 999 → 0 → 100 is 200 µJ
    assert sensor.read_energy_j()["cpu0"] == pytest.approx(200e-6)
    fake.set("intel-rapl:0", 950)
    fake.set("intel-rapl:0", 50)  # never seen 950: one wrap from 100 is 950 µJ
    assert sensor.read_energy_j()["cpu0"] == pytest.approx((200 + 950) * 1e-6)


def test_power_from_energy_delta_between_calls(intel: FakePowercap) -> None:
    clock = Clock()
    sensor = RaplSensor(intel.root, clock=clock)
    clock.t += 2.0
    intel.set("intel-rapl:0", 1_000_000 + 200_000_000)  # 200 J in 2 s
    power = sensor.read_power_w()  # first call: since construction
    assert power["cpu0"] == pytest.approx(100.0)
    assert power["cpu1"] == 0.0
    clock.t += 0.5
    intel.set("intel-rapl:0", 1_000_000 + 275_000_000)  # 75 J in 0.5 s
    sensor.read_energy_j()  # a counter read in between does not shift the power interval
    assert sensor.read_power_w()["cpu0"] == pytest.approx(150.0)


def test_amd_layout_package_and_core_without_dram(tmp_path: Path) -> None:
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 10)
    fake.zone("intel-rapl:0/intel-rapl:0:0", "core", 10)
    sensor = RaplSensor(fake.root)
    assert [d.key for d in sensor.devices] == ["cpu0"]


def test_no_zones_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SensorUnavailable, match="no RAPL domains under"):
        RaplSensor(tmp_path / "nothing")
    only_psys = FakePowercap(tmp_path / "laptop")
    only_psys.zone("intel-rapl:0", "psys", 10)
    with pytest.raises(SensorUnavailable, match="no RAPL domains"):
        RaplSensor(only_psys.root)


def _assert_permission_message(message: str) -> None:
    assert "chmod a+r" in message
    assert "intel-rapl:*/energy_uj" in message and "intel-rapl:*/intel-rapl:*/energy_uj" in message
    assert "CVE-2020-8694" in message and "5.10" in message
    assert "udev" in message and "root" in message
    assert "CPU model (estimated)" in message


def test_permission_denied_explains_how_to_grant_access(
    intel: FakePowercap, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = rapl._read_int

    def root_only(path: str) -> int:  # what a non-root reader meets since Linux 5.10
        if path.endswith("/energy_uj"):
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(rapl, "_read_int", root_only)
    with pytest.raises(SensorUnavailable) as info:
        RaplSensor(intel.root)
    _assert_permission_message(str(info.value))
    assert str(intel.root) in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_by_file_mode(intel: FakePowercap) -> None:
    for zone in ("intel-rapl:0", "intel-rapl:1"):
        (intel.root / zone / "energy_uj").chmod(0o000)
    with pytest.raises(SensorUnavailable) as info:
        RaplSensor(intel.root)
    _assert_permission_message(str(info.value))


def test_unreadable_zone_is_skipped_at_start(intel: FakePowercap) -> None:
    energy = intel.root / "intel-rapl:1" / "energy_uj"
    energy.unlink()
    energy.mkdir()  # reading it raises IsADirectoryError, not a permission problem
    sensor = RaplSensor(intel.root)
    assert [d.key for d in sensor.devices] == ["cpu0", "dram0", "dram1"]


def test_read_errors_mid_run_are_gaps_then_sensor_error(intel: FakePowercap) -> None:
    clock = Clock()
    sensor = RaplSensor(intel.root, clock=clock)
    (intel.root / "intel-rapl:0" / "intel-rapl:0:1" / "energy_uj").unlink()
    intel.set("intel-rapl:0", 1_000_000 + 4_000_000)
    clock.t += 1.0
    energy = sensor.read_energy_j()
    assert "dram0" not in energy and energy["cpu0"] == pytest.approx(4.0)
    assert "dram0" not in sensor.read_power_w()
    # The counter comes back: the energy of the gap is not lost.
    intel.set("intel-rapl:0/intel-rapl:0:1", 200_000 + 3_000_000)
    assert sensor.read_energy_j()["dram0"] == pytest.approx(3.0)
    (intel.root / "intel-rapl:0" / "energy_uj").write_text("garbage\n")
    assert "cpu0" not in sensor.read_energy_j()
    shutil.rmtree(intel.root)
    with pytest.raises(SensorError):
        sensor.read_energy_j()
    with pytest.raises(SensorError):
        sensor.read_power_w()


def test_discover_prefers_rapl_and_adds_dram_model_when_missing(tmp_path: Path) -> None:
    fake = FakePowercap(tmp_path)
    fake.zone("intel-rapl:0", "package-0", 10)  # AMD-like: no DRAM domain
    sensors, notes = discover_cpu_sensors(rapl_root=fake.root)
    assert isinstance(sensors[0], RaplSensor)
    assert isinstance(sensors[1], DramModelSensor)
    assert any("no DRAM domain" in n for n in notes)


def test_discover_uses_rapl_dram_when_present(intel: FakePowercap) -> None:
    sensors, notes = discover_cpu_sensors(rapl_root=intel.root)
    assert len(sensors) == 1 and isinstance(sensors[0], RaplSensor)
    assert notes == []


def test_discover_falls_back_to_the_model_with_the_reason(
    intel: FakePowercap, monkeypatch: pytest.MonkeyPatch
) -> None:
    def denied(path: str) -> int:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(rapl, "_read_int", denied)
    sensors, notes = discover_cpu_sensors(rapl_root=intel.root)
    assert [type(s) for s in sensors] == [CpuModelSensor, DramModelSensor]
    assert all(d.method == "estimated" for s in sensors for d in s.devices)
    assert len(notes) == 1 and "chmod a+r" in notes[0]


def test_discover_rejects_unknown_scope(tmp_path: Path) -> None:
    from greenml.errors import ConfigError

    with pytest.raises(ConfigError):
        discover_cpu_sensors(scope="container", rapl_root=tmp_path)
