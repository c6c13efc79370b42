"""Hand a plan to the engine users run: a SkyPilot task YAML, a Slurm sbatch header.

SkyPilot fields follow its documented task schema (``resources.infra``,
``use_spot``, ``any_of``, ``job_recovery``, ``file_mounts`` with a bucket in
MOUNT mode); the tests validate the output against the JSON schemas of
SkyPilot 0.14.1. Slurm reads ``--begin`` in the controller's local time, so
the header writes the planned instant in the cluster's zone (an IANA name,
DST included) and states the UTC instant and the zone beside it. Absolute
times, not ``now+N``: a relative time would move with the moment of
submission. A plan of several pieces becomes a submit script that calls
``sbatch`` once per piece, each after the one before
(``--dependency=afterany:``), each with its own ``--begin`` and ``--time``.

Lazy imports: PyYAML (~30 ms) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from typing import Any

from greenml.errors import ConfigError

RECOVERY_STRATEGIES = ("EAGER_NEXT_REGION", "FAILOVER")
_STORES = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "r2": "r2", "cos": "ibm", "oci": "oci"}


@dataclass(frozen=True)
class Placement:
    """Where a task may run: ``aws/us-east-1``, ``gcp/europe-north1``, or ``aws``."""

    infra: str

    @staticmethod
    def parse(text: str) -> Placement:
        cloud, _, region = text.strip().partition("/")
        if not cloud or (region and not region.strip("/")):
            raise ConfigError(f"a placement is cloud[/region], like aws/us-east-1, not {text!r}")
        return Placement(f"{cloud.lower()}/{region}" if region else cloud.lower())


def skypilot_task(
    *,
    name: str,
    run: str,
    placements: Sequence[Placement],
    use_spot: bool,
    accelerators: str | None = None,
    checkpoint_bucket: str | None = None,
    checkpoint_dir: str = "/checkpoints",
    recovery: str = "EAGER_NEXT_REGION",
    max_restarts_on_errors: int = 3,
    recover_on_exit_codes: Sequence[int] = (),
    setup: str | None = None,
    envs: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A SkyPilot task (as a dict) for a planned job.

    One placement pins ``infra``; several become ``any_of`` so SkyPilot may
    fail over between them; none leaves the choice to SkyPilot. The task gets
    a ``job_recovery`` strategy and, with a bucket, a checkpoint mount the job
    resumes from.

    Raises:
        ConfigError: An unknown recovery strategy, or a bucket URL that is not
            ``s3://``, ``gs://``, ``r2://`` ….
    """
    if recovery not in RECOVERY_STRATEGIES:
        raise ConfigError(f"recovery must be one of {', '.join(RECOVERY_STRATEGIES)}")
    resources: dict[str, Any] = {}
    if len(placements) == 1:
        resources["infra"] = placements[0].infra
    elif placements:
        resources["any_of"] = [{"infra": p.infra} for p in placements]
    if accelerators:
        resources["accelerators"] = accelerators
    resources["use_spot"] = use_spot
    recovery_block: dict[str, Any] = {
        "strategy": recovery,
        "max_restarts_on_errors": max_restarts_on_errors,
    }
    if recover_on_exit_codes:
        recovery_block["recover_on_exit_codes"] = sorted(set(recover_on_exit_codes))
    resources["job_recovery"] = recovery_block
    task: dict[str, Any] = {"name": name, "resources": resources}
    task_envs = dict(envs or {})
    if checkpoint_bucket:
        task["file_mounts"] = {checkpoint_dir: _bucket_mount(checkpoint_bucket)}
        task_envs.setdefault("GREENML_CHECKPOINT_DIR", checkpoint_dir)
    if task_envs:
        task["envs"] = task_envs
    if setup:
        task["setup"] = setup
    task["run"] = run
    return task


def _bucket_mount(url: str) -> dict[str, Any]:
    scheme, sep, rest = url.partition("://")
    store = _STORES.get(scheme.lower())
    bucket = rest.split("/", 1)[0]
    if not sep or store is None or not bucket:
        known = ", ".join(f"{s}://" for s in _STORES)
        raise ConfigError(f"checkpoint bucket {url!r} must be a bucket URL ({known})")
    return {"name": bucket, "store": store, "mode": "MOUNT"}


def skypilot_yaml(task: dict[str, Any]) -> str:
    """The task as YAML text."""
    import yaml

    text: str = yaml.safe_dump(task, sort_keys=False, default_flow_style=False)
    return text


@dataclass(frozen=True)
class Piece:
    """One piece of a planned job: start at ``begin`` and run ``duration_s``."""

    begin: datetime
    duration_s: float


@dataclass(frozen=True)
class ClusterZone:
    """The zone Slurm's controller reads ``--begin`` in, and how greenml knows it."""

    tz: tzinfo | None  # None: this machine's local zone, rules included
    label: str
    origin: str

    @staticmethod
    def named(name: str) -> ClusterZone:
        """An IANA zone such as ``Europe/Berlin``.

        Raises:
            ConfigError: Not a zone name the tz database knows.
        """
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            tz = ZoneInfo(name.strip())
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(
                f"--cluster-tz {name!r} is not a time zone name (IANA, like Europe/Berlin or UTC)"
            ) from None
        return ClusterZone(tz, str(tz), "the cluster's zone, from --cluster-tz")

    @staticmethod
    def local() -> ClusterZone:
        """This machine's zone (by IANA name when it can be found, so DST is followed)."""
        name = _local_zone_name()
        if name:
            try:
                zone = ClusterZone.named(name)
                return ClusterZone(zone.tz, zone.label, _LOCAL_ORIGIN)
            except ConfigError:
                pass
        label = datetime.now().astimezone().strftime("%Z") or "local"
        return ClusterZone(None, label, _LOCAL_ORIGIN)

    def at(self, moment: datetime) -> datetime:
        return moment.astimezone(self.tz) if self.tz is not None else moment.astimezone()

    def repeats(self, moment: datetime) -> bool:
        """Whether the local wall time of ``moment`` happens twice (DST ends)."""
        local = self.at(moment).replace(tzinfo=None)
        if self.tz is None:
            return False
        first = local.replace(tzinfo=self.tz, fold=0).utcoffset()
        second = local.replace(tzinfo=self.tz, fold=1).utcoffset()
        # first > second when clocks go back; a gap (clocks go forward) holds no real instant
        return first is not None and second is not None and first > second


_LOCAL_ORIGIN = "this machine's zone; give --cluster-tz if the cluster's differs"


def _local_zone_name() -> str | None:
    import os
    from pathlib import Path

    name = os.environ.get("TZ", "").lstrip(":")
    if name:
        return name
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return None
    _, sep, rest = target.partition("zoneinfo/")
    return rest if sep and rest else None


def _slurm_time(duration_s: float) -> str:
    minutes = max(1, math.ceil(duration_s / 60.0))
    return f"{minutes // 1440}-{minutes % 1440 // 60:02d}:{minutes % 60:02d}:00"


def slurm_header(
    *,
    job_name: str,
    begin: datetime,
    duration_s: float,
    deadline: datetime | None = None,
    requeue: bool = True,
    checkpoint_signal_s: float | None = 120.0,
    zone: ClusterZone | None = None,
) -> str:
    """``#SBATCH`` lines that start the job at the planned time.

    ``--begin`` and ``--deadline`` are written in ``zone`` (the cluster's;
    default: this machine's). ``--signal=B:USR1@N`` asks Slurm to send SIGUSR1
    N seconds before the time limit, which greenml's checkpointer turns into
    an emergency checkpoint.
    """
    if begin.tzinfo is None:
        raise ConfigError("the planned start must carry a time zone")
    zone = zone or ClusterZone.local()
    local_begin = zone.at(begin)
    lines = [
        "#!/bin/bash",
        f"# Planned by greenml: start {begin.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z = "
        f"{local_begin:%Y-%m-%dT%H:%M} {local_begin:%Z} in {zone.label} ({zone.origin}); "
        "Slurm reads --begin in the controller's local time",
    ]
    if zone.repeats(begin):
        lines.append(
            f"# Note: {local_begin:%H:%M} happens twice on {local_begin:%Y-%m-%d} in {zone.label} "
            "(DST ends); Slurm may read the other one, an hour off"
        )
    lines += [
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --begin={local_begin:%Y-%m-%dT%H:%M:%S}",
        f"#SBATCH --time={_slurm_time(duration_s)}",
    ]
    if deadline is not None:
        lines.append(f"#SBATCH --deadline={zone.at(deadline):%Y-%m-%dT%H:%M:%S}")
    if requeue:
        lines.append("#SBATCH --requeue")
    if checkpoint_signal_s:
        lines.append(f"#SBATCH --signal=B:USR1@{int(checkpoint_signal_s)}")
    return "\n".join(lines) + "\n"


def slurm_script(
    *,
    job_name: str,
    run: str,
    pieces: Sequence[Piece],
    deadline: datetime | None = None,
    zone: ClusterZone | None = None,
    note: str | None = None,
) -> str:
    """What to hand Slurm: an sbatch script for one piece, a submit script for several.

    The submit script (``bash FILE``) calls ``sbatch --parsable`` once per
    piece with the piece's script on standard input, each piece after the
    one before has ended (``--dependency=afterany:JOBID``), so a piece that
    starts late never overlaps the next. Each piece exports
    ``GREENML_PIECE`` and ``GREENML_PIECES``; the job resumes from its
    checkpoint.

    Raises:
        ConfigError: No pieces, or a start without a time zone.
    """
    if not pieces:
        raise ConfigError("the plan has no piece to emit")
    zone = zone or ClusterZone.local()
    ordered = sorted(pieces, key=lambda p: p.begin)
    if len(ordered) == 1:
        header = slurm_header(
            job_name=job_name, begin=ordered[0].begin, duration_s=ordered[0].duration_s,
            deadline=deadline, zone=zone,
        )  # fmt: skip
        if note:
            header = header.replace("\n", f"\n# {note}\n", 1)
        return header + run + "\n"
    count = len(ordered)
    lines = [
        "#!/bin/bash",
        f"# Planned by greenml: {count} pieces of one job. Submit with: bash THIS_FILE",
        "# (it calls sbatch once per piece; each waits for the one before: afterany).",
    ]
    if note:
        lines.append(f"# {note}")
    lines += [
        "set -euo pipefail",
        'prev=""',
        "submit() {",
        '  if [ -n "$prev" ]; then sbatch --parsable --dependency="afterany:$prev"; '
        "else sbatch --parsable; fi",
        "}",
    ]
    for index, piece in enumerate(ordered, 1):
        end = piece.begin + timedelta(seconds=piece.duration_s)
        marker = f"GREENML_PIECE_{index}"
        header = slurm_header(
            job_name=job_name, begin=piece.begin, duration_s=piece.duration_s,
            deadline=deadline, zone=zone,
        )  # fmt: skip
        lines += [
            "",
            f"# piece {index}/{count}: {piece.begin.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z"
            f" to {end.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z",
            f"prev=$(submit <<'{marker}'",
            header.rstrip("\n"),
            f"export GREENML_PIECE={index} GREENML_PIECES={count}",
            run,
            marker,
            ")",
            'prev="${prev%%;*}"  # --parsable prints JOBID[;CLUSTER]',
            f'echo "piece {index}/{count}: job $prev"',
        ]
    return "\n".join(lines) + "\n"
