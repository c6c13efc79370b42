"""`greenml doctor` against fake machines (sysfs trees, fake vendor modules) and on this one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from greenml.cli.app import cli
from greenml.measure.doctor import Finding, Machine
from greenml.measure.doctor_probes import diagnose_machine
from greenml.measure.sensors import rapl
from tests.fakes.fake_amdsmi import FakeAmdSmi, mi300x
from tests.fakes.fake_sysfs import FakeMachine


def _by_id(findings: list[Finding]) -> dict[str, Finding]:
    return {f.sensor: f for f in findings}


def _machine(fake: FakeMachine, **kwargs: object) -> Machine:
    defaults: dict[str, object] = {"system": "linux", "arch": "x86_64", "is_root": False,
                                   "which": lambda name: None}  # fmt: skip
    defaults.update(kwargs)
    return Machine(root=fake.root, **defaults)  # type: ignore[arg-type]


def test_a_vm_without_gpu_or_rapl_has_only_the_labelled_models(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path, rapl_flag=False)
    fake.pci("0x1af4", "0x020000")  # a virtio network card, not a GPU
    found = _by_id(diagnose_machine(_machine(fake)))
    assert found["nvml"].status == "absent"
    assert found["amdsmi"].status == "absent"
    assert found["rapl"].status == "unsupported"
    assert "virtual machine" in found["rapl"].reason and found["rapl"].fix == ""
    assert found["amd_energy"].status == "unsupported"
    cpu = found["cpu-model"]
    assert cpu.usable and cpu.devices[0].method == "estimated"
    assert cpu.devices[0].uncertainty_rel == pytest.approx(0.3)  # EPYC 7763 is in the table
    assert found["dram-model"].usable


def test_an_amd_server_is_measured_by_counters_with_amd_labels(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path)
    fake.pci("0x1002", "0x120000")
    fake.rapl_zone("intel-rapl:0", "package-0", 1_000_000)
    fake.rapl_zone("intel-rapl:0/intel-rapl:0:0", "core", 500_000)
    fake.amd_energy()
    machine = _machine(fake, modules={"amdsmi": FakeAmdSmi(mi300x(2))})
    found = _by_id(diagnose_machine(machine))
    gpu = found["amdsmi"]
    assert gpu.usable and [d.key for d in gpu.devices] == ["gpu0", "gpu1"]
    assert {d.method for d in gpu.devices} == {"counter"}
    cpu = found["rapl"]
    assert [d.component for d in cpu.devices] == ["cpu"]  # AMD: no DRAM domain
    assert cpu.devices[0].uncertainty_rel == rapl.AMD_PACKAGE_UNCERTAINTY
    assert "AMD" in cpu.devices[0].name and "no DRAM" in cpu.devices[0].note
    assert found["amd_energy"].usable
    assert found["amd_energy"].devices[0].name.startswith("AMD Esocket0")


def test_rapl_permission_denied_gives_the_chmod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: E501
    fake = FakeMachine(tmp_path, vendor="GenuineIntel", model="Intel(R) Xeon(R) Gold 6248")
    fake.rapl_zone("intel-rapl:0", "package-0", 1)

    def denied(path: str) -> int:
        raise PermissionError(13, "Permission denied", path)  # energy_uj is 0400 since 5.10

    monkeypatch.setattr(rapl, "_read_int", denied)
    found = _by_id(diagnose_machine(_machine(fake)))
    assert found["rapl"].status == "permission"
    assert found["rapl"].fix.startswith("sudo chmod a+r /sys/class/powercap/intel-rapl:*/energy_uj")


def test_missing_drivers_and_packages_say_the_command(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path)
    fake.pci("0x1002")  # an AMD GPU but no /dev/kfd
    fake.pci("0x10de")  # an NVIDIA GPU but no nvidia-ml-py
    machine = _machine(fake, modules={"pynvml": None})
    found = _by_id(diagnose_machine(machine))
    assert found["amdsmi"].status == "driver-missing"
    assert "amdgpu-install" in found["amdsmi"].fix
    assert found["nvml"].status == "not-installed"
    assert found["nvml"].fix.startswith("pip install 'nvidia-ml-py")


def test_amd_gpus_without_the_bindings_name_them(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path)
    fake.pci("0x1002")
    kfd = fake.path("dev/kfd")
    kfd.parent.mkdir(parents=True)
    kfd.write_text("")
    found = _by_id(diagnose_machine(_machine(fake, modules={"amdsmi": None})))
    assert found["amdsmi"].status == "not-installed"
    assert "amd_smi" in found["amdsmi"].fix


def test_a_jetson_board_is_measured_from_its_input_rail(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path, vendor="", model="ARMv8 Processor rev 1 (v8l)", rapl_flag=False)
    fake.jetson_orin()
    found = _by_id(diagnose_machine(_machine(fake, arch="aarch64")))
    board = found["jetson"]
    assert board.usable and [(d.key, d.method) for d in board.devices] == [
        ("board0", "power-integrated")
    ]
    assert "VDD_IN" in board.devices[0].name


def test_powermetrics_without_root_says_sudo(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path, vendor="", model="Apple M2")
    machine = _machine(fake, system="darwin", arch="arm64", modules={"zeus_apple_silicon": None},
                       which=lambda name: f"/usr/bin/{name}")  # fmt: skip
    found = _by_id(diagnose_machine(machine))
    assert found["ioreport"].status == "not-installed"
    assert found["ioreport"].fix == "pip install 'zeus-apple-silicon>=1.0'"
    assert found["powermetrics"].status == "permission"
    assert found["powermetrics"].fix.startswith("sudo -E greenml run")


def test_doctor_on_this_machine_tells_the_truth() -> None:
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    found = {f["sensor"]: f for f in json.loads(result.output)["sensors"]}
    powercap = Path("/sys/class/powercap")
    has_rapl = any(powercap.glob("intel-rapl:*/energy_uj")) if powercap.is_dir() else False
    if not has_rapl:
        assert not found["rapl"]["usable"]
    has_nvidia = Path("/proc/driver/nvidia").exists()
    assert found["nvml"]["usable"] is has_nvidia or found["nvml"]["status"] != "absent"
    assert found["cpu-model"]["usable"]
    assert found["cpu-model"]["devices"][0]["method"] == "estimated"
    run = json.loads(result.output)["run"]
    methods = {d["key"]: d["method"] for d in run["devices"]}
    if not has_rapl and not has_nvidia:  # this VM: the labelled models, and why
        assert methods == {"cpu0": "estimated", "dram0": "estimated"}
        assert any(n.startswith("RAPL not used") for n in run["notes"])
    text = CliRunner().invoke(cli, ["doctor"])
    assert text.exit_code == 0 and "CPU model" in text.output
    assert "greenml run measures here:" in text.output

