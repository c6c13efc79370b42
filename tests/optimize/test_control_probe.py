"""`greenml doctor`'s GPU control check: may the power-limit optimizer set limits here?"""

from __future__ import annotations

from pathlib import Path

from greenml.measure.doctor import Machine
from greenml.measure.doctor_probes import probe_nvml
from greenml.optimize.control_probe import probe_power_limits
from tests.fakes.fake_amdsmi import FakeAmdSmi, mi300x
from tests.fakes.fake_pynvml import FakeNvml, h100
from tests.fakes.fake_sysfs import FakeMachine


def _machine(root: Path, **modules: object) -> Machine:
    return Machine(root=root, system="linux", arch="x86_64", is_root=False,
                   modules=dict(modules), which=lambda name: None)  # fmt: skip


def test_power_limits_say_whether_the_optimizer_may_set_them(tmp_path: Path) -> None:
    root = FakeMachine(tmp_path).root
    allowed = probe_power_limits(_machine(root, pynvml=FakeNvml([h100()])))
    assert allowed.usable and "gpu0" in allowed.reason
    assert probe_nvml(_machine(root, pynvml=FakeNvml([h100()]))).devices[0].method == "counter"
    denied = FakeNvml([h100()], privileged=False)
    found = probe_power_limits(_machine(root, pynvml=denied))
    assert found.status == "permission" and "sudo nvidia-smi" in found.fix
    assert denied.set_calls == []  # nothing was changed
    amd = probe_power_limits(_machine(root, amdsmi=FakeAmdSmi(mi300x(1), privileged=False)))
    assert amd.status == "permission" and "amd-smi" in amd.fix
    assert probe_power_limits(_machine(root)).status == "absent"
