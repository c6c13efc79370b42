"""`greenml run` on each simulated platform: the record has the right components, methods
and uncertainties. Each platform is a fake sysfs tree (GREENML_SYS_ROOT) and fake vendor
bindings (GREENML_FAKE_AMDSMI, GREENML_FAKE_APPLE) following the documented interfaces."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from greenml.measure.sensors import rapl
from greenml.measure.sensors.amdsmi_gpu import AMD_GPU_UNCERTAINTY_REL
from greenml.measure.sensors.apple import IOREPORT_UNCERTAINTY
from greenml.measure.sensors.hwmon import AMD_ENERGY_UNCERTAINTY
from greenml.measure.sensors.jetson import JETSON_UNCERTAINTY
from tests.fakes.fake_sysfs import FakeMachine

REPO = Path(__file__).resolve().parents[2]


def run_on(tmp_path: Path, root: Path, *args: str, **hooks: str) -> dict[str, Any]:
    out = tmp_path / "run.json"
    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db"), "GREENML_SYS_ROOT": str(root),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)]), **hooks}  # fmt: skip
    for var in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"):
        env.pop(var, None)
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "--json-out", str(out), *args, "--",
         sys.executable, "-c", "import time; time.sleep(0.3)"],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record: dict[str, Any] = json.loads(out.read_text())
    return record


def devices(record: dict[str, Any]) -> dict[str, tuple[str, str, float]]:
    """{device key: (component, method, uncertainty)} of a run record."""
    return {
        key: (comp, dev["method"], dev["uncertainty_rel"])
        for comp, c in record["energy"]["components"].items()
        for key, dev in c["devices"].items()
    }


def test_amd_gpu_server(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "root")
    fake.rapl_zone("intel-rapl:0", "package-0", 1_000_000)
    fake.rapl_zone("intel-rapl:0/intel-rapl:0:0", "core", 500_000)
    record = run_on(tmp_path, fake.root, GREENML_FAKE_AMDSMI="tests.fakes.fake_amdsmi:amd_server")
    found = devices(record)
    assert found["gpu0"] == ("gpu", "counter", AMD_GPU_UNCERTAINTY_REL)
    assert found["gpu1"] == ("gpu", "counter", AMD_GPU_UNCERTAINTY_REL)
    assert found["cpu0"] == ("cpu", "counter", rapl.AMD_PACKAGE_UNCERTAINTY)
    assert found["dram0"][1] == "estimated"  # AMD RAPL has no DRAM domain
    gpu_j = record["energy"]["components"]["gpu"]["energy_j"]
    assert 2 * 300 * 0.3 * 0.8 < gpu_j < 2 * 300 * 10  # two 300 W GPUs over the run
    assert any("no DRAM domain" in n for n in record["energy"]["notes"])


def test_amd_cpu_with_amd_energy_only(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "root")
    fake.amd_energy()
    record = run_on(tmp_path, fake.root)
    found = devices(record)
    assert found["cpu0"] == ("cpu", "counter", AMD_ENERGY_UNCERTAINTY)
    assert any("amd_energy hwmon driver is used" in n for n in record["energy"]["notes"])


def test_apple_silicon_mac(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "root", vendor="", model="Apple M2")
    record = run_on(tmp_path, fake.root, GREENML_FAKE_APPLE="tests.fakes.fake_apple:m2_mac")
    found = devices(record)
    assert {k: v[:2] for k, v in found.items()} == {
        "cpu0": ("cpu", "counter"), "gpu0": ("gpu", "counter"),
        "ane0": ("ane", "counter"), "dram0": ("dram", "counter"),
    }  # fmt: skip
    assert {v[2] for v in found.values()} == {IOREPORT_UNCERTAINTY}
    gpu_j = record["energy"]["components"]["gpu"]["energy_j"]
    assert gpu_j == pytest.approx(9.0 * record["duration_s"], rel=0.5)


def test_jetson_board(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "root", vendor="", model="ARMv8 Processor rev 1 (v8l)",
                       rapl_flag=False)  # fmt: skip
    fake.jetson_orin(in_mw=(6000, 2500, 1500))
    record = run_on(tmp_path, fake.root, "--sample-hz", "50")
    found = devices(record)
    (component, method, uncertainty) = found.pop("board0")
    assert (component, method, found) == ("board", "power-integrated", {})
    # the rail's ±5 %, widened by the Meter for a sampled window of well under a second
    assert JETSON_UNCERTAINTY <= uncertainty < 0.5
    energy = record["energy"]["components"]["board"]["energy_j"]
    assert energy == pytest.approx(6.0 * record["duration_s"], rel=0.35)


def test_jetson_without_readable_rails_falls_back_to_tegrastats(tmp_path: Path) -> None:
    fake = FakeMachine(tmp_path / "root", vendor="", model="ARMv8 Processor rev 1 (v8l)",
                       rapl_flag=False)  # fmt: skip
    release = fake.path("etc/nv_tegra_release")
    release.parent.mkdir(parents=True)
    release.write_text("# R35 (release), REVISION: 4.1\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "tegrastats"  # prints its documented line format every 50 ms
    tool.write_text(
        f"#!{sys.executable}\n"
        "import time\n"
        "while True:\n"
        "    print('RAM 2448/7620MB (lfb 3x4MB) CPU [12%@1190] VDD_IN 6000mW/5900mW "
        "VDD_SOC 1400mW/1390mW', flush=True)\n"
        "    time.sleep(0.05)\n"
    )
    tool.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    record = run_on(tmp_path, fake.root, "--sample-hz", "50", PATH=path)
    found = devices(record)
    assert {k: v[:2] for k, v in found.items()} == {"board0": ("board", "power-integrated")}
    assert any("tegrastats used" in n for n in record["energy"]["notes"])
    energy = record["energy"]["components"]["board"]["energy_j"]
    assert 0 < energy <= 6.0 * record["duration_s"] * 1.05
