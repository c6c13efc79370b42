"""The files `savings apply` writes for changes outside greenml, against their own schemas."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import jsonschema
import pytest
import yaml

from greenml.errors import ConfigError
from greenml.savings import artifacts
from greenml.savings.apply import artifact_texts

DATA = Path(__file__).parent / "data"
CRDS = json.loads((DATA / "crd_schemas.json").read_text())
SKY = json.loads((Path(__file__).parents[1] / "schedule" / "data" / "skypilot_schemas.json")
                 .read_text())  # fmt: skip


def _crd(doc: dict) -> None:
    group, version = doc["apiVersion"].split("/")
    jsonschema.validate(doc, CRDS[f"{group}/{version}/{doc['kind']}"])


def test_keda_scaledobject_scales_to_zero_and_is_valid() -> None:
    doc = artifacts.keda_scaledobject("idle-gpu", {"deployment": "llm-serve"})
    _crd(doc)
    assert doc["spec"]["minReplicaCount"] == 0
    assert doc["spec"]["scaleTargetRef"] == {"name": "llm-serve"}


def test_the_crd_schema_catches_a_wrong_scaledobject() -> None:
    doc = artifacts.keda_scaledobject("idle-gpu", {})
    doc["spec"]["minReplicaCount"] = "zero"
    with pytest.raises(jsonschema.ValidationError):
        _crd(doc)
    del doc["spec"]["scaleTargetRef"]
    doc["spec"]["minReplicaCount"] = 0
    with pytest.raises(jsonschema.ValidationError):
        _crd(doc)


def test_karpenter_nodepool_takes_spot_first_and_is_valid() -> None:
    doc = artifacts.karpenter_nodepool("spot", {})
    _crd(doc)
    reqs = doc["spec"]["template"]["spec"]["requirements"]
    assert {"key": "karpenter.sh/capacity-type", "operator": "In",
            "values": ["spot", "on-demand"]} in reqs  # fmt: skip
    doc["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Maybe"
    with pytest.raises(jsonschema.ValidationError):
        _crd(doc)


def test_skypilot_task_has_autostop_and_is_valid() -> None:
    task = artifacts.skypilot("spot", {"spot": True, "infra": "aws/us-east-1"})
    loaded = yaml.safe_load(yaml.safe_dump(task))
    jsonschema.validate(loaded, SKY["task"])
    jsonschema.validate(loaded["resources"], SKY["resources"])
    assert loaded["resources"]["autostop"] == {"idle_minutes": 10, "down": True}
    assert loaded["resources"]["use_spot"] is True


def test_slurm_line_begins_in_the_green_hours_within_the_deadline() -> None:
    now = datetime(2026, 10, 5, 6, 10, tzinfo=timezone.utc)  # CISO: dirty until ~14:00 UTC
    line = artifacts.slurm_line("green", {"location": "US-CAL-CISO", "deadline": "+16h"},
                                now=now, cluster_tz="America/Los_Angeles")  # fmt: skip
    begin = next(p for p in line.split() if p.startswith("--begin="))
    local = datetime.fromisoformat(begin.removeprefix("--begin="))
    assert 9 <= local.hour <= 15  # 16:00–22:00 UTC is 09:00–15:00 in Los Angeles (PDT)
    assert "--deadline=2026-10-05T15:10:00" in line  # 22:10 UTC in PDT
    with pytest.raises(ConfigError):
        artifacts.slurm_line("green", {"location": "US-CAL-CISO", "deadline": "soon"}, now=now)


def test_an_item_gets_the_files_of_its_kind() -> None:
    spot = artifact_texts({"id": "spot", "key": "spot", "settings": {"spot": True}})
    assert sorted(spot) == ["spot.karpenter.yaml", "spot.skypilot.yaml"]
    assert artifact_texts({"id": "p", "key": "gpu-power:A100", "settings": {}}) == {}
