"""SkyPilot task YAML and Slurm headers, checked against SkyPilot's own schemas."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from greenml.errors import ConfigError
from greenml.schedule.emit import (
    ClusterZone,
    Placement,
    skypilot_task,
    skypilot_yaml,
    slurm_header,
)

SCHEMAS = json.loads((Path(__file__).parent / "data" / "skypilot_schemas.json").read_text())


def _validate(task: dict[str, Any]) -> None:
    """Validate like SkyPilot: the task, its resources, and each bucket mount."""
    jsonschema.validate(task, SCHEMAS["task"])
    jsonschema.validate(task["resources"], SCHEMAS["resources"])
    for mount in task.get("file_mounts", {}).values():
        if isinstance(mount, dict):
            jsonschema.validate(mount, SCHEMAS["storage"])


def test_spot_task_with_failover_regions_and_checkpoint_bucket_is_valid() -> None:
    task = skypilot_task(
        name="train-llm",
        run="python train.py --resume",
        placements=[Placement.parse("aws/eu-north-1"), Placement.parse("gcp/europe-north1")],
        use_spot=True,
        accelerators="A100:8",
        checkpoint_bucket="s3://team-ckpt/llm",
        recover_on_exit_codes=[75],
    )
    text = skypilot_yaml(task)
    loaded = yaml.safe_load(text)
    _validate(loaded)
    resources = loaded["resources"]
    assert resources["any_of"] == [{"infra": "aws/eu-north-1"}, {"infra": "gcp/europe-north1"}]
    assert resources["use_spot"] is True
    assert resources["job_recovery"]["strategy"] == "EAGER_NEXT_REGION"
    assert resources["job_recovery"]["recover_on_exit_codes"] == [75]
    mount = loaded["file_mounts"]["/checkpoints"]
    assert mount == {"name": "team-ckpt", "store": "s3", "mode": "MOUNT"}
    assert loaded["envs"]["GREENML_CHECKPOINT_DIR"] == "/checkpoints"


def test_single_region_on_demand_task_is_valid() -> None:
    task = skypilot_task(
        name="eval", run="python eval.py", placements=[Placement.parse("gcp")], use_spot=False
    )
    _validate(task)
    assert task["resources"]["infra"] == "gcp"
    assert "file_mounts" not in task


def test_the_schema_catches_what_skypilot_would_refuse() -> None:
    task = skypilot_task(name="x", run="true", placements=[Placement.parse("aws")], use_spot=True)
    task["resources"]["spot"] = True  # not a SkyPilot field
    with pytest.raises(jsonschema.ValidationError):
        _validate(task)


def test_no_placement_leaves_the_choice_and_bad_buckets_are_refused() -> None:
    anywhere = skypilot_task(name="x", run="true", placements=[], use_spot=True)
    _validate(anywhere)
    assert "infra" not in anywhere["resources"] and "any_of" not in anywhere["resources"]
    with pytest.raises(ConfigError, match="bucket URL"):
        skypilot_task(
            name="x",
            run="true",
            placements=[Placement.parse("aws")],
            use_spot=True,
            checkpoint_bucket="/local/dir",
        )
    with pytest.raises(ConfigError, match="cloud\\[/region\\]"):
        Placement.parse("/us-east-1")


def test_slurm_header_starts_at_the_planned_time_in_local_time() -> None:
    begin = datetime(2026, 11, 23, 2, 30, tzinfo=timezone.utc)
    berlin = ClusterZone.named("Europe/Berlin")
    text = slurm_header(
        job_name="train",
        begin=begin,
        duration_s=26 * 3600 + 90,
        deadline=begin + timedelta(hours=30),
        zone=berlin,
    )
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "#SBATCH --begin=2026-11-23T03:30:00" in lines
    assert "#SBATCH --time=1-02:02:00" in lines
    assert "#SBATCH --deadline=2026-11-24T09:30:00" in lines
    assert "#SBATCH --signal=B:USR1@120" in lines
    assert "#SBATCH --requeue" in lines
    assert "2026-11-23T02:30Z" in lines[1]
