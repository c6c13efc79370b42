"""A PSU's hwmon chip as the node meter, on a fake sysfs tree (the hwmon sysfs ABI)."""

from __future__ import annotations

from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.measure.measurement import COUNTER, POWER_INTEGRATED
from greenml.measure.node.sensor import NodeSensor
from greenml.measure.node.spec import parse_node_meter


def chip(root: Path, n: int, name: str, **files: str) -> Path:
    d = root / "sys/class/hwmon" / f"hwmon{n}"
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    for key, value in files.items():
        (d / key).write_text(value + "\n")
    return d


def test_a_psu_by_name_sums_its_power_channels(tmp_path: Path) -> None:
    chip(tmp_path, 0, "k10temp", temp1_input="45000")
    chip(tmp_path, 1, "pmbus", power1_input="212500000", power2_input="7500000",
         power1_label="pin")  # fmt: skip
    sensor = NodeSensor(parse_node_meter("hwmon:pmbus", tmp_path), poll=False)
    try:
        (device,) = sensor.devices
        assert device.component == "node" and device.method == POWER_INTEGRATED
        assert sensor.read_power_w() == {"node0": pytest.approx(220.0)}
    finally:
        sensor.close()


def test_an_energy_channel_makes_it_a_counter(tmp_path: Path) -> None:
    d = chip(tmp_path, 2, "acpi_power_meter", power1_input="150000000",
             energy1_input="5000000")  # fmt: skip
    sensor = NodeSensor(parse_node_meter("hwmon:/sys/class/hwmon/hwmon2", tmp_path), poll=False)
    try:
        assert sensor.devices[0].method == COUNTER
        assert sensor.read_energy_j() == {"node0": 5.0}
        (d / "energy1_input").write_text("9500000\n")
        assert sensor.read_energy_j() == {"node0": 9.5}
    finally:
        sensor.close()


def test_a_chip_without_power_or_a_missing_name_is_a_config_error(tmp_path: Path) -> None:
    chip(tmp_path, 0, "coretemp", temp1_input="40000")
    with pytest.raises(ConfigError, match="no power"):
        parse_node_meter("hwmon:coretemp", tmp_path)
    with pytest.raises(ConfigError, match="no hwmon chip named"):
        parse_node_meter("hwmon:pmbus", tmp_path)
