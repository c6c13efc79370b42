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

Attribution rule (labelled in the metric's help and per GPU in
``greenml_gpu_attribution_info``; :mod:`greenml.measure.gpu_share`): a GPU's
energy over a tick is split by each process's SM activity over the tick (NVML's
per-process utilization samples), the board's idle draw kept apart
(``greenml_gpu_idle_energy_joules``), equal shares only when the driver gives
no samples (said so); a process outside any pod keeps its share as
unattributed, never spread over the pods. Under MIG, instances are weighed by
their own SM activity (GPM per instance, Hopper+) and an instance's share goes
to its pods equally; without per-instance activity the GPU is measured whole
(unattributed, labelled). The exporter runs with the host's PID namespace
(``hostPID``) so that NVML's process ids are the ones in ``/proc``.

Lazy imports: prometheus_client, when the metrics are collected.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.errors import SensorUnavailable
from greenml.measure.gpu_share import MIG_WHOLE, GpuShare, MigActivity, Split, split_energy

log = logging.getLogger("greenml")

_CONTAINER_ID = re.compile(r"([0-9a-f]{64})")
_LOG_NAME = re.compile(
    r"^(?P<pod>[^_]+)_(?P<ns>[^_]+)_(?P<container>.+)-(?P<id>[0-9a-f]{64})\.log$"
)
ATTRIBUTION = (
    "by each process's SM activity over each tick (NVML process utilization), idle draw "
    "apart; equal shares only without activity samples; see greenml_gpu_attribution_info"
)
_NO_INSTANCE = 0xFFFFFFFF


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
        idle_w: The idle power of each GPU (``gpuN`` → W) where known; else learned.
        clock: Monotonic seconds, for the length of each tick.

    Raises:
        SensorUnavailable: NVML cannot be initialized.
    """

    def __init__(self, resolver: PodResolver, nvml: Any,
                 idle_w: Mapping[str, float] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        from greenml.measure.sensors.nvml import visible_handles

        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            raise SensorUnavailable(f"GPU energy per pod needs NVML: {exc}") from None
        self.resolver = resolver
        self._nvml = nvml
        self._clock = clock
        self._handles = {f"gpu{i}": h for i, h in enumerate(visible_handles(nvml))}
        given = dict(idle_w or {})
        self._shares = {k: GpuShare(nvml, h, given.get(k)) for k, h in self._handles.items()}
        self._mig = {k: MigActivity(nvml, h) for k, h in self._handles.items()}
        self._last: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()
        self.joules: dict[tuple[PodRef, str], float] = {}
        self.unattributed: dict[str, float] = {}
        self.idle: dict[str, float] = {}
        self.methods: dict[str, tuple[str, str]] = {}

    def update(self, energy_j: Mapping[str, float]) -> None:
        """Share each GPU's energy since the last call (``energy_j``: cumulative J per key)."""
        now = self._clock()
        for key, total in energy_j.items():
            handle = self._handles.get(key)
            if handle is None:
                continue
            last_total, last_t = self._last.get(key, (total, now))
            self._last[key] = (total, now)
            delta, dt = max(0.0, total - last_total), max(0.0, now - last_t)
            processes = self._processes_on(handle)
            split = self._split(key, handle, delta, dt, processes)
            pods = {pid: self.resolver.resolve(pid) for pid in processes}
            with self._lock:
                self.methods[key] = (split.method, split.idle_basis)
                self.idle[key] = self.idle.get(key, 0.0) + split.idle_j
                rest = split.unattributed_j
                for pid, joules in split.shares_j.items():
                    ref = pods.get(pid)
                    if ref is None:  # a host process, or one that left: not a pod's
                        rest += joules
                        continue
                    self.joules[(ref, key)] = self.joules.get((ref, key), 0.0) + joules
                if rest or key in self.unattributed or not split.shares_j:
                    self.unattributed[key] = self.unattributed.get(key, 0.0) + rest

    def _split(self, key: str, handle: Any, energy_j: float, duration_s: float,
               processes: dict[int, int | None]) -> Split:  # fmt: skip
        instances = {gi for gi in processes.values() if gi is not None}
        if not instances:
            return self._shares[key].split(energy_j, duration_s, processes)
        activity = self._mig[key].read(instances)
        if activity is None:  # the board measured whole
            return Split({}, 0.0, energy_j, MIG_WHOLE)
        idle, basis = self._shares[key].idle_power()
        by_instance = split_energy(energy_j, duration_s, activity, instances, idle)
        shares: dict[Any, float] = {}
        for gi, joules in by_instance.shares_j.items():
            pids = [pid for pid, g in processes.items() if g == gi]
            for pid in pids:
                shares[pid] = joules / len(pids)
        method = f"MIG instances by their SM activity (GPM); {by_instance.method}"
        return Split(shares, by_instance.idle_j, by_instance.unattributed_j, method,
                     basis or by_instance.idle_basis)  # fmt: skip

    def _processes_on(self, handle: Any) -> dict[int, int | None]:
        """{pid: MIG GPU instance id or None} of the compute processes on the GPU."""
        try:
            processes = self._nvml.nvmlDeviceGetComputeRunningProcesses(handle)
        except self._nvml.NVMLError as exc:
            log.debug("greenml: GPU processes not read: %s", exc)
            return {}
        out: dict[int, int | None] = {}
        for p in processes:
            gi = getattr(p, "gpuInstanceId", _NO_INSTANCE)
            out[int(p.pid)] = None if gi in (None, _NO_INSTANCE) else int(gi)
        return out

    def collect(self, host: str, job: str = "") -> Iterator[Any]:
        """The counters as Prometheus metric families."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        with self._lock:
            joules, unattributed = dict(self.joules), dict(self.unattributed)
            idle, methods = dict(self.idle), dict(self.methods)
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
            "GPU energy no pod took: no process on the GPU, processes outside pods, or a MIG "
            "GPU measured whole (J).",
            labels=["host", "greenml_job", "device"],
        )
        for device, value in sorted(unattributed.items()):
            rest.add_metric([host, job, device], value)
        yield rest
        idle_family = CounterMetricFamily(
            "greenml_gpu_idle_energy_joules",
            "The GPU's idle draw over the ticks, kept apart from the pods' shares (J).",
            labels=["host", "greenml_job", "device"],
        )
        for device, value in sorted(idle.items()):
            idle_family.add_metric([host, job, device], value)
        yield idle_family
        info = GaugeMetricFamily(
            "greenml_gpu_attribution_info",
            "How each GPU's energy was split among pods at the last tick (1 per GPU).",
            labels=["host", "greenml_job", "device", "method", "idle_basis"],
        )
        for device, (method, basis) in sorted(methods.items()):
            info.add_metric([host, job, device, method, basis or "none"], 1.0)
        yield info


class PodCollector:
    """A Prometheus collector over a :class:`PodGpuEnergy`."""

    def __init__(self, pods: PodGpuEnergy, host: str, job: str = "") -> None:
        self.pods, self.host, self.job = pods, host, job

    def collect(self) -> Iterator[Any]:
        yield from self.pods.collect(self.host, self.job)
