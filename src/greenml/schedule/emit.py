"""Hand a plan to the engine users run: a SkyPilot task YAML, a Slurm sbatch header.

SkyPilot fields follow its documented task schema (``resources.infra``,
``use_spot``, ``any_of``, ``job_recovery``, ``file_mounts`` with a bucket in
MOUNT mode); the tests validate the output against the JSON schemas of
SkyPilot 0.14.1. Slurm reads ``--begin`` in the controller's local time, so
the header states the UTC instant and the zone it was written in.

Lazy imports: PyYAML (~30 ms) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
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


def slurm_header(
    *,
    job_name: str,
    begin: datetime,
    duration_s: float,
    deadline: datetime | None = None,
    requeue: bool = True,
    checkpoint_signal_s: float | None = 120.0,
    local_zone: timezone | None = None,
) -> str:
    """``#SBATCH`` lines that start the job at the planned time.

    ``--signal=B:USR1@N`` asks Slurm to send SIGUSR1 N seconds before the time
    limit, which greenml's checkpointer turns into an emergency checkpoint.
    """
    if begin.tzinfo is None:
        raise ConfigError("the planned start must carry a time zone")
    zone = local_zone or datetime.now().astimezone().tzinfo or timezone.utc
    local_begin = begin.astimezone(zone)
    minutes = max(1, math.ceil(duration_s / 60.0))
    lines = [
        "#!/bin/bash",
        f"# Planned by greenml: start {begin.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z "
        f"(written in the {local_begin:%Z} time zone; Slurm reads --begin in local time)",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --begin={local_begin:%Y-%m-%dT%H:%M:%S}",
        f"#SBATCH --time={minutes // 1440}-{minutes % 1440 // 60:02d}:{minutes % 60:02d}:00",
    ]
    if deadline is not None:
        lines.append(f"#SBATCH --deadline={deadline.astimezone(zone):%Y-%m-%dT%H:%M:%S}")
    if requeue:
        lines.append("#SBATCH --requeue")
    if checkpoint_signal_s:
        lines.append(f"#SBATCH --signal=B:USR1@{int(checkpoint_signal_s)}")
    return "\n".join(lines) + "\n"
