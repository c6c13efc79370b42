"""GPU energy per Kubernetes pod: NVML's running processes, through cgroups, to pods.

Kepler attributes CPU and DRAM energy to pods; GPU energy per pod is what an
ML cluster misses. On each exporter tick, :class:`PodGpuEnergy` takes each
GPU's energy since the last tick and splits it among the pods that have a
compute process on that GPU (NVML ``nvmlDeviceGetComputeRunningProcesses``):

1. a process id → its cgroup (``/proc/PID/cgroup``) → the container id
   (64 hex digits in the cgroup path: containerd, CRI-O and Docker alike);
2. the container id → namespace, pod and container from the kubelet's log
   links ``/var/log/containers/POD_NAMESPACE_CONTAINER-ID.log`` (no API access
   needed: the DaemonSet mounts the directory read-only).

Attribution rule (labelled in the metric's help): a GPU's energy over a tick is
shared equally among the pods with a compute process on it at the tick's end;
energy while no pod's process is on the GPU is counted as unattributed, never
spread. The exporter runs with the host's PID namespace (``hostPID``) so that
NVML's process ids are the ones in ``/proc``.

Lazy imports: prometheus_client, when the metrics are collected.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.errors import SensorUnavailable

log = logging.getLogger("greenml")

_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")
_LOG_NAME = re.compile(
    r"^(?P<pod>[^_]+)_(?P<ns>[^_]+)_(?P<container>.+)-(?P<id>[0-9a-f]{64})\.log$"
)
ATTRIBUTION = "equal shares among the pods with a compute process on the GPU at each tick"


@dataclass(frozen=True, order=True)
class PodRef:
    """The container a process runs in."""

    namespace: str
    pod: str
    container: str
    container_id: str


class PodResolver:
    """Process id → :class:`PodRef`, from a ``/proc`` tree and the kubelet's container logs."""

    def __init__(self, proc_root: str | Path = "/proc",
                 containers_dir: str | Path = "/var/log/containers") -> None:  # fmt: skip
        self.proc_root = Path(proc_root)
        self.containers_dir = Path(containers_dir)
        self._by_id: dict[str, PodRef] = {}

    def container_id(self, pid: int) -> str | None:
        """The container id in the process's cgroup, or None (a process outside containers)."""
        try:
            text = (self.proc_root / str(int(pid)) / "cgroup").read_text(encoding="utf-8")
        except (OSError, ValueError):
            return None
        for line in text.splitlines():
            path = line.rpartition(":")[2]
            found: list[str] = _CONTAINER_ID.findall(path)
            if found:
                return found[-1]
        return None

    def resolve(self, pid: int) -> PodRef | None:
        """The pod container running ``pid``; None when it is not in a known container."""
        cid = self.container_id(pid)
        if cid is None:
            return None
        if cid not in self._by_id:
            self._refresh()
        return self._by_id.get(cid)

    def _refresh(self) -> None:
        try:
            names = [p.name for p in self.containers_dir.iterdir()]
        except OSError as exc:
            log.debug("greenml: %s not readable: %s", self.containers_dir, exc)
            return
        for name in names:
            m = _LOG_NAME.match(name)
            if m:
                self._by_id[m["id"]] = PodRef(m["ns"], m["pod"], m["container"], m["id"])


class PodGpuEnergy:
    """Joules per (pod container, GPU), accumulated tick by tick (see the module docstring).

    Args:
        resolver: Maps process ids to pods.
        nvml: The ``pynvml`` module (or a fake); GPU ``gpuN`` is NVML's N-th visible GPU.

    Raises:
        SensorUnavailable: NVML cannot be initialized.
    """

    def __init__(self, resolver: PodResolver, nvml: Any) -> None:
        from greenml.measure.sensors.nvml import visible_handles

        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise SensorUnavailable(f"GPU energy per pod needs NVML: {exc}") from None
        self.resolver = resolver
        self._nvml = nvml
        self._handles = {f"gpu{i}": h for i, h in enumerate(visible_handles(nvml))}
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self.joules: dict[tuple[PodRef, str], float] = {}
        self.unattributed: dict[str, float] = {}

    def update(self, energy_j: Mapping[str, float]) -> None:
        """Share each GPU's energy since the last call (``energy_j``: cumulative J per key)."""
        for key, total in energy_j.items():
            handle = self._handles.get(key)
            if handle is None:
                continue
            delta = max(0.0, total - self._last.get(key, total))
            self._last[key] = total
            pods = sorted(self._pods_on(handle))
            with self._lock:
                if not pods:
                    self.unattributed[key] = self.unattributed.get(key, 0.0) + delta
                    continue
                for pod in pods:
                    share = delta / len(pods)
                    self.joules[(pod, key)] = self.joules.get((pod, key), 0.0) + share

    def _pods_on(self, handle: Any) -> set[PodRef]:
        try:
            processes = self._nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except self._nvml.NVMLError as exc:
            log.debug("greenml: GPU processes not read: %s", exc)
            return set()
        found = (self.resolver.resolve(int(p.pid)) for p in processes)
        return {ref for ref in found if ref is not None}

    def collect(self, host: str, job: str = "") -> Iterator[Any]:
        """The counters as Prometheus metric families."""
        from prometheus_client.core import CounterMetricFamily

        with self._lock:
            joules, unattributed = dict(self.joules), dict(self.unattributed)
        pods = CounterMetricFamily(
            "greenml_pod_gpu_energy_joules",
            f"GPU energy attributed to a pod's container (J; {ATTRIBUTION}).",
            labels=["host", "greenml_job", "namespace", "pod", "container", "device"],
        )
        for (ref, device), value in sorted(joules.items()):
            pods.add_metric([host, job, ref.namespace, ref.pod, ref.container, device], value)
        yield pods
        rest = CounterMetricFamily(
            "greenml_gpu_unattributed_energy_joules",
            "GPU energy while no pod had a compute process on the GPU (J).",
            labels=["host", "greenml_job", "device"],
        )
        for device, value in sorted(unattributed.items()):
            rest.add_metric([host, job, device], value)
        yield rest


class PodCollector:
    """A Prometheus collector over a :class:`PodGpuEnergy`."""

    def __init__(self, pods: PodGpuEnergy, host: str, job: str = "") -> None:
        self.pods, self.host, self.job = pods, host, job

    def collect(self) -> Iterator[Any]:
        yield from self.pods.collect(self.host, self.job)
