"""Push sinks for short jobs: a Pushgateway and an OTLP collector, both local servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from greenml.errors import PushError
from greenml.exporter.push import push_gateway, push_otlp, run_figures
from greenml.record.run_record import RunRecord
from tests.exporter.recording_server import recording_server

REPO = Path(__file__).resolve().parents[2]
RECORD_DATA: dict[str, Any] = {
    "id": "0123456789ab", "name": "bert", "duration_s": 12.5,
    "energy": {"total_j": 900.0, "components": {"gpu": {"energy_j": 900.0, "devices": {
        "gpu0": {"energy_j": 400.0, "method": "counter"},
        "gpu1": {"energy_j": 500.0, "method": "counter"}}}}},
    "carbon": {"status": "ok", "kg": 0.002}, "cost": {"status": "unknown", "usd": None},
    "job": {"job_id": "4242", "node": "gpu-node-3", "node_rank": 3},
}  # fmt: skip
RECORD = RunRecord.from_dict(RECORD_DATA)


def test_the_figures_pushed() -> None:
    figures = {(f.name, f.labels.get("device")): f for f in run_figures(RECORD)}
    assert figures[("greenml_run_energy_joules", None)].value == 900.0
    assert figures[("greenml_run_device_energy_joules", "gpu1")].value == 500.0
    assert figures[("greenml_run_co2_grams", None)].value == pytest.approx(2.0)
    assert ("greenml_run_cost_usd", None) not in figures  # unknown: not pushed as 0
    labels = figures[("greenml_run_energy_joules", None)].labels
    assert labels == {"run_id": "0123456789ab", "run_name": "bert", "greenml_job": "4242",
                      "node": "gpu-node-3", "node_rank": "3"}  # fmt: skip


def test_a_pushgateway_gets_the_run_grouped_by_job_and_node() -> None:
    with recording_server() as gw:
        push_gateway(gw.url, RECORD)
    (req,) = gw.requests
    assert req.method == "PUT"
    assert req.path == "/metrics/job/4242/node/gpu-node-3/run_id/0123456789ab"
    text = req.body.decode()
    assert 'greenml_run_device_energy_joules{component="gpu",device="gpu1",' in text
    assert 'greenml_job="4242"' in text and "500.0" in text


def test_a_refused_push_is_a_push_error() -> None:
    with recording_server(status=500) as gw, pytest.raises(PushError, match="push failed"):
        push_gateway(gw.url, RECORD)


def test_an_otlp_collector_gets_the_gauges() -> None:
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    with recording_server() as collector:
        push_otlp(f"{collector.url}/v1/metrics", RECORD)
    (req,) = collector.requests
    assert req.path == "/v1/metrics" and req.content_type == "application/x-protobuf"
    message = ExportMetricsServiceRequest.FromString(req.body)
    (resource,) = message.resource_metrics
    attrs = {a.key: a.value.string_value for a in resource.resource.attributes}
    assert attrs["greenml.job"] == "4242" and attrs["host.name"] == "gpu-node-3"
    metrics = {m.name: m for s in resource.scope_metrics for m in s.metrics}
    assert set(metrics) == {"greenml_run_energy_joules", "greenml_run_device_energy_joules",
                            "greenml_run_duration_seconds", "greenml_run_co2_grams"}  # fmt: skip
    points = {
        {a.key: a.value.string_value for a in p.attributes}["device"]: p.as_double
        for p in metrics["greenml_run_device_energy_joules"].gauge.data_points
    }
    assert points == {"gpu0": 400.0, "gpu1": 500.0}


def test_an_otlp_collector_that_refuses_is_a_push_error() -> None:
    with recording_server(status=400) as collector, pytest.raises(PushError, match="failed"):
        push_otlp(f"{collector.url}/v1/metrics", RECORD, timeout_s=2)


def test_greenml_run_pushes_at_the_end_and_keeps_the_exit_code(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM", "GREENML_"))}
    env.update(PYTHONPATH=str(REPO / "src"), GREENML_LEDGER=str(tmp_path / "ledger.jsonl"))
    with recording_server() as gw:
        done = subprocess.run(
            [sys.executable, "-m", "greenml", "run", "-q", "--gpus", "none", "--job", "j-9",
             "--node-rank", "0", "--db", f"sqlite:///{tmp_path / 'g.db'}",
             "--push-gateway", gw.url, "--json-out", str(tmp_path / "r.json"), "--",
             sys.executable, "-c", "raise SystemExit(3)"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr
    run_id = json.loads((tmp_path / "r.json").read_text())["id"]
    (req,) = gw.requests
    assert req.path.startswith("/metrics/job/j-9/node/") and req.path.endswith(f"/run_id/{run_id}")
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "-q", "--gpus", "none", "--no-job",
         "--db", f"sqlite:///{tmp_path / 'g.db'}", "--push-gateway", "http://127.0.0.1:9",
         "--", sys.executable, "-c", "raise SystemExit(4)"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4
    assert "greenml: warning: Pushgateway http://127.0.0.1:9: push failed" in done.stderr
