"""GPU energy per pod: NVML processes → a fake /proc cgroup tree → the kubelet's container logs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.exporter.pods import PodGpuEnergy, PodRef, PodResolver
from tests.fakes.fake_pynvml import FakeClock, FakeNvml, Phase, h100

CID_A = "a" * 63 + "1"
CID_B = "b" * 63 + "2"
CID_OTHER = "c" * 64  # a container no pod log names (a runtime-only container)
POD_UID = "4d5e6f70-1111-2222-3333-444455556666"


def _proc(root: Path, pid: int, cgroup: str) -> None:
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "cgroup").write_text(cgroup)


@pytest.fixture
def resolver(tmp_path: Path) -> PodResolver:
    proc, logs = tmp_path / "proc", tmp_path / "containers"
    logs.mkdir()
    # cgroup v2 under systemd + containerd, cgroup v1 under cgroupfs + Docker, a host process
    uid = POD_UID.replace("-", "_")
    _proc(proc, 101, f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}"
                     f".slice/cri-containerd-{CID_A}.scope\n")  # fmt: skip
    _proc(proc, 202, f"12:memory:/kubepods/besteffort/pod{POD_UID}/{CID_B}\n"
                     f"11:devices:/kubepods/besteffort/pod{POD_UID}/{CID_B}\n")  # fmt: skip
    _proc(proc, 303, "0::/user.slice/user-1000.slice/session-3.scope\n")
    _proc(proc, 404, f"0::/kubepods.slice/cri-containerd-{CID_OTHER}.scope\n")
    (logs / f"train-bert-0_ml_trainer-{CID_A}.log").write_text("")
    (logs / f"serve-llm-7c9_inference_server-{CID_B}.log").write_text("")
    return PodResolver(proc, logs)


def test_processes_resolve_to_their_pod_container(resolver: PodResolver) -> None:
    assert resolver.resolve(101) == PodRef("ml", "train-bert-0", "trainer", CID_A)
    assert resolver.resolve(202) == PodRef("inference", "serve-llm-7c9", "server", CID_B)
    assert resolver.resolve(303) is None  # not in a container
    assert resolver.resolve(404) is None  # a container without a pod log
    assert resolver.resolve(999) is None  # gone


def test_gpu_energy_is_shared_among_the_pods_on_each_gpu(resolver: PodResolver) -> None:
    clock = FakeClock(0.0)
    gpus = [h100("GPU-0", trace=(Phase(0.0, 400.0),), processes=[(101, 2**30)]),
            h100("GPU-1", trace=(Phase(0.0, 200.0),), processes=[(101, 1), (202, 1), (303, 1)])]
    nvml = FakeNvml(gpus, clock)
    pods = PodGpuEnergy(resolver, nvml)
    pods.update({"gpu0": 1000.0, "gpu1": 500.0})  # the first reading: nothing to share yet
    pods.update({"gpu0": 1400.0, "gpu1": 700.0})
    gpus[0].processes = []  # the trainer left GPU 0
    pods.update({"gpu0": 1500.0, "gpu1": 800.0})
    a = PodRef("ml", "train-bert-0", "trainer", CID_A)
    b = PodRef("inference", "serve-llm-7c9", "server", CID_B)
    # The fake gives no per-process samples: equal shares, said so; the host process 303
    # keeps its third as unattributed instead of handing it to the pods.
    assert pods.joules == pytest.approx({(a, "gpu0"): 400.0, (a, "gpu1"): 100.0,
                                         (b, "gpu1"): 100.0})  # fmt: skip
    assert pods.unattributed == pytest.approx({"gpu0": 100.0, "gpu1": 100.0})
    assert pods.methods["gpu1"][0].startswith("equal")
    total = sum(pods.joules.values()) + sum(pods.unattributed.values())
    assert total == pytest.approx(500.0 + 300.0)  # every joule is somewhere, once


def test_the_exporter_serves_pod_labels(resolver: PodResolver) -> None:
    from prometheus_client import CollectorRegistry, generate_latest

    from greenml.exporter.pods import PodCollector

    nvml = FakeNvml([h100("GPU-0", processes=[(202, 1)])], FakeClock(0.0))
    pods = PodGpuEnergy(resolver, nvml)
    pods.update({"gpu0": 0.0})
    pods.update({"gpu0": 12.5})
    registry = CollectorRegistry()
    registry.register(PodCollector(pods, host="node-1", job="j"))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    assert ('greenml_pod_gpu_energy_joules_total{container="server",device="gpu0",'
            'greenml_job="j",host="node-1",namespace="inference",pod="serve-llm-7c9"} 12.5'
            in text)  # fmt: skip


@given(st.text(max_size=300))
def test_any_cgroup_file_resolves_or_is_none(tmp_path_factory: pytest.TempPathFactory,
                                             text: str) -> None:  # fmt: skip
    root = tmp_path_factory.mktemp("proc")
    (root / "7").mkdir()
    (root / "7" / "cgroup").write_text(text, encoding="utf-8", errors="replace")
    cid = PodResolver(root, root / "none").container_id(7)
    assert cid is None or (len(cid) == 64 and cid in text)


def test_the_exporter_loop_attributes_its_gpu_energy(resolver: PodResolver) -> None:
    from prometheus_client import generate_latest

    from greenml.exporter import Exporter
    from greenml.measure.meter import Meter
    from greenml.measure.sensors.nvml import NvmlSensor

    clock = FakeClock(100.0)
    nvml = FakeNvml([h100("GPU-0", trace=(Phase(0.0, 300.0),), processes=[(101, 1)])], clock)
    meter = Meter(sensors=[NvmlSensor(nvml=nvml)], sample_hz=0, record_samples=True, clock=clock)
    with meter, Exporter(meter, pods=PodGpuEnergy(resolver, nvml), host="n1") as exp:
        exp.step()
        clock.advance(10.0)
        exp.step()
        text = generate_latest(exp.registry).decode()
    name = "greenml_pod_gpu_energy_joules_total{"
    line = next(ln for ln in text.splitlines() if ln.startswith(name))
    assert 'pod="train-bert-0"' in line and float(line.rsplit(" ", 1)[1]) == pytest.approx(3000.0)
