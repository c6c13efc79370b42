"""Zeus-format traces of recurring training jobs: load, validate, index.

Two CSV files describe a job (the Zeus NSDI'23 artifact, ml-energy/zeus,
``examples/research_reproducibility/zeus_nsdi23/trace/``):

* the *train trace* gives, per (dataset, network, batch size, optimizer,
  learning rate, run), the epoch at which ``target_metric`` was reached
  (``nan`` when it never was) — one *training path* per run;
* the *power trace* of one GPU gives, per (dataset, network, batch size,
  optimizer, power limit), the time of one epoch and the mean GPU power.

A (batch size, power limit) pair missing from either file cannot be replayed:
it is skipped and listed in :attr:`WorkloadTrace.skipped`, never guessed.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

from greenml.errors import ConfigError


@dataclass(frozen=True)
class JobSpec:
    """How the Zeus artifact defines one recurring job.

    Attributes:
        dataset: Dataset name as in the traces.
        network: Model name as in the traces.
        optimizer: Training optimizer (lower case) as in the traces.
        target_metric: Validation metric a recurrence must reach.
        max_epochs: A recurrence that has not reached the target by then fails.
        default_batch_size: The user's batch size b0 (capped by the largest
            batch size the GPU's power trace holds).
    """

    dataset: str
    network: str
    optimizer: str
    target_metric: float
    max_epochs: int
    default_batch_size: int

    @property
    def workload(self) -> str:
        """``dataset/network``."""
        return f"{self.dataset}/{self.network}"


# The six jobs as the Zeus NSDI'23 artifact replays them (get_job_with_defaults in
# examples/research_reproducibility/zeus_nsdi23/run_alibaba.py, zeus==0.16.0; Apache-2.0).
ZEUS_JOBS: dict[str, JobSpec] = {
    job.workload: job
    for job in (
        JobSpec("cifar100", "shufflenetv2", "adadelta", 0.6, 100, 1024),
        JobSpec("imagenet", "resnet50", "adadelta", 0.65, 100, 256),
        JobSpec("squad", "bert_base_uncased", "adamw", 84.0, 6, 32),
        JobSpec("librispeech", "deepspeech2", "adamw", 40.0, 16, 256),
        JobSpec("movielens-1m", "ncf", "adam", 0.41, 100, 1024),
        JobSpec("sentiment140", "bert_base_uncased", "adamw", 0.84, 10, 128),
    )
}

TRAIN_COLUMNS = ("dataset", "network", "batch_size", "optimizer", "target_metric", "target_epoch")
POWER_COLUMNS = (
    "dataset",
    "network",
    "batch_size",
    "optimizer",
    "power_limit",
    "time_per_epoch",
    "average_power",
)


@dataclass(frozen=True)
class EpochProfile:
    """One epoch of one (batch size, power limit) pair from the power trace."""

    time_s: float
    power_w: float

    @property
    def energy_j(self) -> float:
        """Energy of the epoch."""
        return self.time_s * self.power_w


@dataclass(frozen=True)
class Skipped:
    """A (batch size, power limit) pair that cannot be replayed, and why."""

    batch_size: int
    power_limit: float | None
    reason: str


@dataclass(frozen=True)
class WorkloadTrace:
    """Everything the simulator replays for one job on one GPU.

    Attributes:
        job: The job definition.
        default_batch_size: b0 after capping to the power trace's largest size.
        batch_sizes: Sizes with a training path and at least one power limit.
        power_limits: Every limit the power trace holds for the job (W).
        epochs: Per batch size, one entry per training path: the epoch the
            target was reached at, or None when it was not within max_epochs.
        profiles: Per (batch size, power limit), the epoch time and power.
        skipped: Pairs that cannot be replayed, with the reason.
    """

    job: JobSpec
    default_batch_size: int
    batch_sizes: tuple[int, ...]
    power_limits: tuple[float, ...]
    epochs: dict[int, tuple[int | None, ...]]
    profiles: dict[tuple[int, float], EpochProfile]
    skipped: tuple[Skipped, ...] = field(default=())

    @property
    def max_power_w(self) -> float:
        """The largest power limit: P_max of the cost."""
        return max(self.power_limits)

    def limits_for(self, batch_size: int) -> list[float]:
        """The power limits the trace holds for ``batch_size``, highest first."""
        return sorted((p for b, p in self.profiles if b == batch_size), reverse=True)


def _read_rows(path: Path, columns: tuple[str, ...], what: str) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise ConfigError(f"{what} {path} lacks column(s) {', '.join(missing)}")
            return list(reader)
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None


def _number(row: dict[str, str], column: str, line: int, path: Path) -> float:
    try:
        return float(row[column])
    except (TypeError, ValueError):
        text = row[column]
        raise ConfigError(f"{path} line {line}: {column} is not a number: {text!r}") from None


def _key(row: dict[str, str]) -> str:
    return f"{row['dataset'].strip()}/{row['network'].strip()}"


def workloads_in(train_trace: str | Path, power_trace: str | Path) -> list[str]:
    """The ``dataset/network`` pairs present in both traces."""
    train = {_key(r) for r in _read_rows(Path(train_trace), TRAIN_COLUMNS, "train trace")}
    power = {_key(r) for r in _read_rows(Path(power_trace), POWER_COLUMNS, "power trace")}
    return sorted(train & power)


def load_workload(
    train_trace: str | Path,
    power_trace: str | Path,
    workload: str,
    default_batch_size: int | None = None,
) -> WorkloadTrace:
    """Read both traces and keep what one job needs.

    Args:
        train_trace: Path of the train trace (``summary_train.csv``).
        power_trace: Path of one GPU's power trace (``summary_power_<gpu>.csv``).
        workload: ``dataset/network``, one of :data:`ZEUS_JOBS`.
        default_batch_size: Overrides the job's b0 (before capping).

    Raises:
        ConfigError: A file is unreadable or malformed, the workload is not in
            both traces (the message lists those that are) or has no job
            definition, or nothing of it can be replayed.
    """
    train_path, power_path = Path(train_trace), Path(power_trace)
    train_rows = _read_rows(train_path, TRAIN_COLUMNS, "train trace")
    power_rows = _read_rows(power_path, POWER_COLUMNS, "power trace")
    present = sorted({_key(r) for r in train_rows} & {_key(r) for r in power_rows})
    if workload not in present:
        listed = ", ".join(present) if present else "none"
        raise ConfigError(f"workload {workload!r} is not in both traces; present: {listed}")
    job = ZEUS_JOBS.get(workload)
    if job is None:
        known = ", ".join(sorted(ZEUS_JOBS))
        raise ConfigError(f"no job definition (target metric, max epochs) for {workload}: {known}")

    epochs: dict[int, list[int | None]] = {}
    for line, row in enumerate(train_rows, start=2):
        if _key(row) != workload or row["optimizer"].strip().lower() != job.optimizer:
            continue
        if not math.isclose(_number(row, "target_metric", line, train_path), job.target_metric):
            continue
        batch_size = int(_number(row, "batch_size", line, train_path))
        epoch = _number(row, "target_epoch", line, train_path)
        reached = not math.isnan(epoch) and epoch <= job.max_epochs
        epochs.setdefault(batch_size, []).append(int(epoch) if reached else None)

    samples: dict[tuple[int, float], list[tuple[float, float]]] = {}
    for line, row in enumerate(power_rows, start=2):
        if _key(row) != workload or row["optimizer"].strip().lower() != job.optimizer:
            continue
        pair = (
            int(_number(row, "batch_size", line, power_path)),
            _number(row, "power_limit", line, power_path),
        )
        time_s = _number(row, "time_per_epoch", line, power_path)
        power_w = _number(row, "average_power", line, power_path)
        if not (time_s > 0 and power_w > 0):
            raise ConfigError(f"{power_path} line {line}: time and power must be positive")
        samples.setdefault(pair, []).append((time_s, power_w))
    # Repeated rows of one pair are averaged (the upstream files have none).
    profiles = {
        pair: EpochProfile(sum(t for t, _ in s) / len(s), sum(p for _, p in s) / len(s))
        for pair, s in samples.items()
    }
    return _assemble(job, epochs, profiles, default_batch_size)


def _assemble(
    job: JobSpec,
    epochs: dict[int, list[int | None]],
    profiles: dict[tuple[int, float], EpochProfile],
    default_batch_size: int | None,
) -> WorkloadTrace:
    if not profiles:
        raise ConfigError(f"the power trace has no rows for {job.workload} with {job.optimizer}")
    limits = sorted({p for _, p in profiles})
    power_sizes = {b for b, _ in profiles}
    skipped: list[Skipped] = []
    for b in sorted(set(epochs) - power_sizes):
        skipped.append(Skipped(b, None, "in the train trace only (no power profile)"))
    for b in sorted(power_sizes - set(epochs)):
        skipped.append(Skipped(b, None, "in the power trace only (no training path)"))
    sizes = sorted(set(epochs) & power_sizes)
    for b in sizes:
        for p in limits:
            if (b, p) not in profiles:
                skipped.append(Skipped(b, p, "power limit missing from the power trace"))
    if not sizes:
        raise ConfigError(f"no batch size of {job.workload} is in both traces")
    wanted = job.default_batch_size if default_batch_size is None else default_batch_size
    default = min(wanted, max(power_sizes))
    if default not in sizes:
        raise ConfigError(
            f"default batch size {default} of {job.workload} cannot be replayed; "
            f"batch sizes in both traces: {', '.join(map(str, sizes))}"
        )
    return WorkloadTrace(
        job=job,
        default_batch_size=default,
        batch_sizes=tuple(sizes),
        power_limits=tuple(limits),
        epochs={b: tuple(epochs[b]) for b in sizes},
        profiles={k: v for k, v in profiles.items() if k[0] in sizes},
        skipped=tuple(skipped),
    )
