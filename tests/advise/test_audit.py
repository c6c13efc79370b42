"""The green-practice audit against a real store: items, evidence, stakes, documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from greenml.advise.audit import audit
from greenml.cli import main
from greenml.store.repository import Store
from tests.diagnose.builders import T0, phases
from tests.run_records import record

CLEAN_ENV = {"packages": {"sha256": "ab" * 32}, "git": {"commit": "c0ffee", "dirty": False}}


def by_key(items: Any) -> dict[str, Any]:
    return {i.key: i for i in items}


def test_a_half_idle_fp32_gpu_run_fails_precision_and_idle_with_their_stakes() -> None:
    run = record(3.6e6, gpu_j=2.0e6, ci_g_per_kwh=400.0, usd_per_kwh=0.2)
    run["environment"] = CLEAN_ENV
    samples = [{"component": "gpu", "sm_activity": a} for a in (0.05, 0.9, 0.05, 0.9)]
    items = by_key(audit([run], lambda _id: samples).items)
    precision = items["precision"]
    assert precision.status == "failed"
    assert precision.energy_j == pytest.approx(1.0e6)  # half the GPU energy, PUE 1
    assert precision.usd == pytest.approx(1.0e6 / 3.6e6 * 0.2)
    assert precision.co2_g == pytest.approx(1.0e6 / 3.6e6 * 400)
    idle = items["idle-gpus"]
    assert idle.status == "failed" and idle.energy_j == pytest.approx(1.0e6)  # half idle
    assert items["underused-gpus"].status == "failed"  # mean 47.5 %
    assert items["environment"].status == "passed"
    assert items["ci-gate"].status == "failed"
    assert items["spot-checkpointing"].status == "unknown"
    assert {i.group for i in items.values()} == {"model", "machine", "mechanization", "map"}


def test_evidence_that_passes() -> None:
    run = record(3.6e6, gpu_j=2.0e6, tags={"precision": "bf16"}, ci_g_per_kwh=20.0)
    run["environment"] = CLEAN_ENV
    run["schedule"] = {"plan": "green"}
    run["carbon"]["facility_energy_kwh"] = 1.0
    busy = [{"component": "gpu", "utilization": 0.95}] * 5
    verdicts = [{"outcome": "pass", "checked_at": "2026-01-01T00:00:00+00:00"}]
    items = by_key(audit([run], lambda _id: busy, verdicts).items)
    for key in ("precision", "idle-gpus", "underused-gpus", "environment", "ci-gate",
                "monitoring", "location", "carbon-aware"):  # fmt: skip
        assert items[key].status == "passed", key


def test_no_runs_leave_everything_unknown_or_failed_never_passed() -> None:
    result = audit([], lambda _id: [])
    assert all(i.status == "unknown" for i in result.items)
    assert result.notes


def stored_gpu_run(store: Store) -> str:
    """A finished A100 run, busy 10 s then idle 10 s, tagged project=p1."""
    run_id = store.create_run(
        name="train", command=["python", "train.py"], tags={"project": "p1"},
        started_at=T0, pid=1, hostname="h",
    )  # fmt: skip
    store.add_samples(run_id, phases("gpu0", [(10, 200.0, 0.9), (10, 60.0, 0.02)]))
    device = {"energy_j": 2600.0, "method": "counter", "uncertainty_rel": 0.05,
              "name": "NVIDIA A100-SXM4-80GB"}  # fmt: skip
    gpu = {**device, "devices": {"gpu0": dict(device)}}
    gpu.pop("name")
    energy = {"total_j": 2600.0, "uncertainty_rel": 0.05, "components": {"gpu": gpu}}
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=20.0,
                     energy=energy, ended_at=T0 + 20)  # fmt: skip
    return run_id


def test_cli_stores_gate_verdicts_and_the_audit_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store(url) as store:
        ids = [stored_gpu_run(store) for _ in range(2)]
    assert main(["report", "audit", "--db", url, "--project", "p1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    gate = next(i for i in data["items"] if i["key"] == "ci-gate")
    assert gate["status"] == "failed"
    assert main(["check", "--db", url, "-b", ids[0], "-c", ids[1]]) == 0
    capsys.readouterr()
    assert main(["report", "audit", "--db", url, "--project", "p1", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    items = {i["key"]: i for i in data["items"]}
    gate = items["ci-gate"]
    assert gate["status"] == "passed" and "1 verdict(s)" in gate["evidence"]
    assert items["idle-gpus"]["status"] == "failed"
    html_out = str(tmp_path / "a.html")
    assert main(["report", "audit", "--db", url, "--format", "html", "-o", html_out]) == 0
    html = (tmp_path / "a.html").read_text(encoding="utf-8")
    assert "Green-practice audit" in html and "Mechanization" in html
    assert main(["report", "--db", url, "--tag", "project=p1", "--kind", "audit"]) == 0
    assert "## Machine" in capsys.readouterr().out
    assert main(["report", "audit", "--db", url, "--project", "nope"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    # folded into the report family: `greenml report audit` is the same document
    assert main(["report", "audit", "--db", url, "--project", "p1", "--format", "json"]) == 0
    alone = json.loads(capsys.readouterr().out)["data"]["items"]
    assert main(["report", "audit", "--db", url, "--project", "p1", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["items"] == alone
    assert main(["report", "audit", ids[0], "--db", url]) == 0  # or on the runs given
    assert "## Machine" in capsys.readouterr().out


def test_a_long_on_demand_job_fails_spot_with_the_discount_at_stake() -> None:
    run = record(3.6e6, gpu_j=2.0e6)
    run["duration_s"] = 10 * 3600.0
    run["cost"]["instance"] = {"hours": 10.0, "instance_type": "g6e.xlarge", "provider": "aws",
                               "pricing": "on-demand"}  # fmt: skip
    item = by_key(audit([run], lambda _id: []).items)["spot-checkpointing"]
    assert item.status == "failed"
    assert item.usd == pytest.approx(10 * (1.861 - 0.7945))  # instance_prices.csv
    run["tags"] = {"spot": "true", "checkpoint": "s3://ckpt"}
    assert by_key(audit([run], lambda _id: []).items)["spot-checkpointing"].status == "passed"


def test_audit_energy_at_stake_carries_its_uncertainty() -> None:
    from greenml.report.audit import _stake

    run = record(3.6e6, rel=0.05, gpu_j=2.0e6, ci_g_per_kwh=400.0, usd_per_kwh=0.2)
    run["environment"] = CLEAN_ENV
    samples = [{"component": "gpu", "sm_activity": a} for a in (0.05, 0.9, 0.05, 0.9)]
    found = audit([run], lambda _id: samples)
    precision = by_key(found.items)["precision"]
    assert precision.uncertainty_rel == pytest.approx(0.05)
    assert precision.to_dict()["uncertainty_rel_at_stake"] == pytest.approx(0.05)
    assert _stake(precision).startswith("0.28 kWh ±5.0 %")  # the report's table, 2 s.f.
