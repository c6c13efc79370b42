"""Energy of a Ray job: a Meter on every Ray node, its energy shared among tasks by time.

``RayEnergy`` (on the driver, after ``ray.init``) starts one small actor per
alive Ray node, pinned there, that measures the node with a :class:`Meter`
(its GPUs and CPU, or the sensors a factory builds). Functions wrapped with
:meth:`RayEnergy.remote` tell a log actor when each call ran and on which node.
At :meth:`RayEnergy.finish`, each node's power timeline is shared among the
tasks that ran on it, each instant's power split equally among the tasks in
flight (:func:`greenml.serve.attribution.attribute_energy`, as for requests);
energy while no task ran is the node's idle energy, reported apart.

Stored as one job (``job.source`` ``ray``, the Ray job id): one run per node,
with its tasks as windows named ``task/NAME``. Per-task figures are labelled
``attributed`` in the report: the node is measured, the split is a model.

Lazy imports: ray, numpy and the store, when used.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from greenml.errors import ConfigError
from greenml.measure.measurement import (
    ComponentEnergy,
    DeviceEnergy,
    Measurement,
    weakest_method,
)
from greenml.measure.sensors.base import Sensor

SensorFactory = Callable[[], Sequence[Sensor]]
ATTRIBUTION = "node power split equally among the tasks in flight (time overlap)"


@dataclass(frozen=True)
class TaskEnergy:
    """One task call: where and when it ran, and the energy attributed to it (J)."""

    task_id: str
    name: str
    node: str
    node_id: str
    start_s: float
    end_s: float
    energy_j: float
    devices: dict[str, float]


@dataclass
class RayJobReport:
    """What :meth:`RayEnergy.finish` found."""

    job_id: str
    tasks: list[TaskEnergy]
    nodes: list[dict[str, Any]]
    run_ids: list[str] = field(default_factory=list)
    attribution: str = ATTRIBUTION
    lost_nodes: list[str] = field(default_factory=list)  # node ids whose meter died with them

    @property
    def total_j(self) -> float:
        return float(sum(n["energy_j"] for n in self.nodes))

    @property
    def task_j(self) -> float:
        return sum(t.energy_j for t in self.tasks)


class _NodeMeterImpl:
    """The per-node actor's body: a Meter over the node's sensors, one window.

    Every ``progress_s`` it sends the log actor what it measured so far (the
    new samples only), so a node that dies with its meter is not lost whole.
    """

    def __init__(self, sensors: SensorFactory | None, sample_hz: float, log: Any = None,
                 progress_s: float = 1.0) -> None:  # fmt: skip
        import threading

        import ray

        from greenml.measure.meter import Meter

        self.node_id = ray.get_runtime_context().get_node_id()
        self.node = socket.gethostname()
        built = list(sensors()) if sensors is not None else None
        self.meter = Meter(sensors=built, sample_hz=sample_hz, record_samples=False,
                           sync_cuda=False, cpu_scope="machine")  # fmt: skip
        self.meter.begin_window("ray-node", sync_execution=False)
        self._sent = {d.key: float("-inf") for d in self.meter.devices}
        self._stop = threading.Event()
        self._progress = None
        if log is not None:
            self._progress = threading.Thread(target=self._report_progress, args=(log, progress_s),
                                              daemon=True, name="greenml-ray-progress")  # fmt: skip
            self._progress.start()

    def _report_progress(self, log: Any, every_s: float) -> None:
        while not self._stop.wait(every_s):
            timelines = {}
            for key, last in self._sent.items():
                times, power = self.meter.timeline(key, since_s=last)
                new = [i for i, t in enumerate(times) if t > last]
                timelines[key] = ([times[i] for i in new], [power[i] for i in new])
                self._sent[key] = times[-1] if times else last
            log.node_progress.remote({
                "node_id": self.node_id, "node": self.node, "pid": os.getpid(),
                "measurement": self.meter.peek_window("ray-node"), "timelines": timelines,
                "devices": self._devices(),
            })  # fmt: skip

    def _devices(self) -> dict[str, tuple[str, str, str, float]]:
        return {d.key: (d.component, d.name, d.method, d.uncertainty_rel)
                for d in self.meter.devices}  # fmt: skip

    def ready(self) -> str:
        return str(self.node_id)

    def finish(self) -> dict[str, Any]:
        self._stop.set()
        if self._progress is not None:
            self._progress.join()
        m = self.meter.end_window("ray-node", sync_execution=False)
        timelines = {d.key: self.meter.timeline(d.key) for d in self.meter.devices}
        devices = self._devices()
        self.meter.close()
        return {"node_id": self.node_id, "node": self.node, "measurement": m,
                "timelines": timelines, "devices": devices, "pid": os.getpid()}  # fmt: skip


class TaskLog:
    """The log actor's body (on the driver's node): what ran where, when.

    ``rows``: (task id, name, node id, start, end) of each finished call;
    ``begun``: task id -> (tag, node id, start) of each call that started, so a
    call lost with its worker or node is still known; ``progress``: each node
    meter's measurement so far.
    """

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, float, float]] = []
        self.begun: dict[str, tuple[Any, str, float]] = {}
        self.progress: dict[str, dict[str, Any]] = {}

    def started(self, task_id: str, tag: Any, node_id: str, start_s: float) -> None:
        self.begun[task_id] = (tag, node_id, start_s)

    def all_started(self) -> dict[str, tuple[Any, str, float]]:
        return dict(self.begun)

    def node_progress(self, snapshot: dict[str, Any]) -> None:
        """A node's measurement so far, and its samples since its last report."""
        node = self.progress.setdefault(snapshot["node_id"], {**snapshot, "timelines": {}})
        node["measurement"] = snapshot["measurement"]
        for key, (times, power) in snapshot["timelines"].items():
            kept = node["timelines"].setdefault(key, ([], []))
            kept[0].extend(times)
            kept[1].extend(power)

    def progress_of(self, node_id: str) -> dict[str, Any] | None:
        return self.progress.get(node_id)

    def record(self, rows: list[tuple[str, str, str, float, float]]) -> None:
        self.rows.extend(rows)

    def all(self) -> list[tuple[str, str, str, float, float]]:
        return list(self.rows)


def start_task_log() -> Any:
    """A :class:`TaskLog` actor on the driver's node (it outlives the worker nodes)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return ray.remote(num_cpus=0)(TaskLog).options(scheduling_strategy=here).remote()


class RayEnergy:
    """Measure every node of the current Ray cluster and attribute its energy to tasks.

    Args:
        sensors: Builds the sensors on each node (picklable, no arguments);
            ``None``: each node's own GPUs and CPU.
        sample_hz: Power samples per second on each node.
        db_url: Where :meth:`finish` stores the job (``None``: the default store).
        store: Store the job (one run per node); ``False``: only report.
        name: The runs' name (the job name, for scaling across node counts).
        job_id: The job id; default: Ray's job id.
        progress_s: How often each node sends what it measured so far, kept in
            case the node dies (its energy then counts up to its last report).
    """

    def __init__(self, *, sensors: SensorFactory | None = None, sample_hz: float = 10.0,
                 db_url: str | None = None, store: bool = True, name: str | None = None,
                 job_id: str | None = None, progress_s: float = 1.0) -> None:  # fmt: skip
        self._progress_s = progress_s
        self._sensors = sensors
        self._hz = sample_hz
        self._db_url = db_url
        self._store = store
        self.name = name
        self.job_id = job_id
        self._meters: list[Any] = []
        self._nodes: list[str] = []
        self._log: Any = None
        self._started_at = 0.0
        self.report: RayJobReport | None = None  # set by :meth:`finish`

    @property
    def progress_s(self) -> float:
        """How often each node reports what it measured so far (s)."""
        return self._progress_s

    @property
    def task_log(self) -> Any:
        """The :class:`TaskLog` actor (after :meth:`start`), for callers that log calls."""
        return self._log

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has run."""
        return self._log is not None

    def start(self) -> RayEnergy:
        """Start a meter on each alive node (after ``ray.init``).

        Raises:
            ConfigError: Ray is not initialized.
        """
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        if not ray.is_initialized():
            raise ConfigError("RayEnergy needs a Ray cluster: call ray.init() first")
        self.job_id = self.job_id or ray.get_runtime_context().get_job_id()
        self._started_at = time.time()
        self._log = start_task_log()
        meter_actor = ray.remote(num_cpus=0)(_NodeMeterImpl)
        nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))  # type: ignore[no-untyped-call]
        self._meters = []
        self._nodes = nodes
        for node in nodes:
            pinned = NodeAffinitySchedulingStrategy(node, soft=False)
            self._meters.append(meter_actor.options(scheduling_strategy=pinned).remote(
                self._sensors, self._hz, self._log, self._progress_s))  # fmt: skip
        ray.get([m.ready.remote() for m in self._meters])
        return self

    def remote(self, fn: Callable[..., Any], **options: Any) -> Any:
        """``ray.remote(fn)`` whose calls are logged (node, start, end) for attribution."""
        import ray

        log = self._log
        name = getattr(fn, "__name__", "task")

        def measured(*args: Any, **kwargs: Any) -> Any:
            context = ray.get_runtime_context()
            start = time.time()
            try:
                return fn(*args, **kwargs)
            finally:
                row = (str(context.get_task_id()), name, str(context.get_node_id()), start,
                       time.time())  # fmt: skip
                log.record.remote([row])

        measured.__name__ = name
        return ray.remote(**options)(measured) if options else ray.remote(measured)

    def log_tasks(self, rows: Sequence[tuple[str, str, str, float, float]]) -> None:
        """Add calls made outside :meth:`remote` (task id, name, node id, start, end)."""
        self._log.record.remote(list(rows))

    def finish(self) -> RayJobReport:
        """Stop the meters, attribute each node's energy to its tasks, store the job.

        A node that died during the job (its meter with it) is listed in
        ``lost_nodes`` and counted in the expected nodes; its energy up to its
        last progress report is in the report (``lost: True``), not stored. A
        second call returns the first report.
        """
        import ray
        from ray.exceptions import RayActorError

        if self.report is not None:
            return self.report
        finished, lost, partial = [], [], []
        for node_id, meter in zip(self._nodes, self._meters, strict=True):
            try:
                finished.append(ray.get(meter.finish.remote()))
            except RayActorError:
                lost.append(node_id)
                seen = ray.get(self._log.progress_of.remote(node_id))
                partial += [{**seen, "lost": True}] if seen else []
        rows = ray.get(self._log.all.remote())
        report = attribute_tasks(str(self.job_id), [*finished, *partial], rows)
        report.lost_nodes = lost
        if self._store:
            report.run_ids = _store_job(report, finished, self._db_url, self.name,
                                        self._started_at)  # fmt: skip
        for actor in [*self._meters, self._log]:
            ray.kill(actor)
        self.report = report
        return report

    def __enter__(self) -> RayEnergy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.finish()


def attribute_tasks(
    job_id: str, nodes: Sequence[dict[str, Any]], rows: Sequence[tuple[str, str, str, float, float]]
) -> RayJobReport:
    """Each node's energy shared among its tasks by time overlap, device by device."""
    from greenml.serve.attribution import attribute_energy

    tasks: list[TaskEnergy] = []
    out_nodes = []
    for rank, node in enumerate(nodes):
        m: Measurement = node["measurement"]
        span = (m.started_at.timestamp(), m.started_at.timestamp() + m.duration_s)
        mine = [r for r in rows if r[2] == node["node_id"]]
        per_task = [dict[str, float]() for _ in mine]
        idle = 0.0
        for key, (times, power) in node["timelines"].items():
            if len(times) < 2 or not mine:
                continue
            # clipped to what the node measured: past its last sample power is not known
            # (a node lost mid-job), and is not carried on
            starts = [min(max(r[3], span[0]), span[1]) for r in mine]
            ends = [min(max(r[4], s), span[1]) for r, s in zip(mine, starts, strict=True)]
            found = attribute_energy(times, power, starts, ends, span_s=span)
            idle += found.idle_energy_j
            for i, value in enumerate(found.energy_j):
                per_task[i][key] = float(value)
        for r, devices in zip(mine, per_task, strict=True):
            tasks.append(TaskEnergy(r[0], r[1], node["node"], r[2], r[3], r[4],
                                    sum(devices.values()), devices))  # fmt: skip
        out_nodes.append({"node": node["node"], "node_id": node["node_id"], "node_rank": rank,
                          "energy_j": m.total_j, "tasks": len(mine), "idle_j": idle,
                          "duration_s": m.duration_s, "end_s": span[1],
                          "uncertainty_rel": m.uncertainty_rel,
                          "method": _method(m), "lost": bool(node.get("lost"))})  # fmt: skip
    return RayJobReport(job_id, tasks, out_nodes)


def _store_job(
    report: RayJobReport, nodes: Sequence[dict[str, Any]], db_url: str | None,
    name: str | None, started_at: float,
) -> list[str]:  # fmt: skip
    """One run per node, its tasks as windows, through the one persist path."""
    from greenml.run.persist import FinishedRun, persist_run
    from greenml.store import new_run_id, open_store

    run_ids = []
    with open_store(db_url) as store:
        for info, node in zip(report.nodes, nodes, strict=False):  # lost nodes last, not stored
            m: Measurement = node["measurement"]
            windows = [_task_window(t, node["devices"]) for t in report.tasks
                       if t.node_id == info["node_id"]]  # fmt: skip
            job = {"job_id": report.job_id, "source": "ray", "job_name": name,
                   "node": info["node"], "node_source": "ray", "node_rank": info["node_rank"],
                   "node_rank_source": "ray node order",
                   "expected_nodes": len(nodes) + len(report.lost_nodes),
                   "expected_nodes_source": "ray.nodes()"}  # fmt: skip
            run_id = new_run_id()
            end = m.started_at.timestamp() + m.duration_s
            finished = FinishedRun(
                run_id=run_id, name=name, command=["ray", "job", report.job_id], tags={},
                started_at=max(started_at, m.started_at.timestamp()), pid=int(node["pid"]),
                hostname=info["node"], status="completed", exit_code=0,
                duration_s=m.duration_s, ended_at=end,
                energy={**m.to_dict(), "notes": [f"tasks: {ATTRIBUTION}"]}, window=m,
                windows=windows, extra={"job": job},
            )  # fmt: skip
            persist_run(store, finished)
            run_ids.append(run_id)
    return run_ids


def _task_window(task: TaskEnergy, devices: dict[str, tuple[str, str, str, float]]) -> Measurement:
    components: dict[str, dict[str, DeviceEnergy]] = {}
    for key, joules in task.devices.items():
        component, dev_name, _method, unc = devices[key]
        components.setdefault(component, {})[key] = DeviceEnergy(
            joules, "estimated", unc, f"{dev_name} (attributed)"
        )
    started = datetime.fromtimestamp(task.start_s, tz=timezone.utc)
    return Measurement(f"task/{task.name}", started, task.end_s - task.start_s,
                       {c: ComponentEnergy(d) for c, d in components.items()})  # fmt: skip


def _method(m: Measurement) -> str:
    return weakest_method([c.method for c in m.components.values()]) if m.components else "none"
