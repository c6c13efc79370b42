"""Prometheus metrics of a RequestMeter: on a registry, and on the greenml exporter's endpoint."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from greenml.exporter import Exporter
from greenml.serve.metrics import export_request_metrics
from greenml.serve.requests import RequestMeter
from tests.helpers import ManualClock
from tests.serve.conftest import WALL_OFFSET, fake_meter, sample_at


def run_requests(clock: ManualClock, rm: RequestMeter, meter: object) -> None:
    """Two requests on /a (50 J and 200 J at 100 W) and one on /b (5 J)."""
    plan = (("GET /a", 1.0, 0.5), ("GET /a", 2.0, 2.0), ("GET /b", 5.0, 0.05))
    for route, start, seconds in plan:
        clock.now = 100.0 + start
        token = rm.begin(route)
        clock.now += seconds
        rm.finish(token)
    sample_at(meter, clock, [10])  # type: ignore[arg-type]


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_histogram_counter_and_idle(clock: ManualClock) -> None:
    meter = fake_meter(clock, [(0.0, 100.0)])
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    registry = CollectorRegistry(auto_describe=False)
    export_request_metrics(rm, registry, job="api", host="node1")
    run_requests(clock, rm, meter)
    found = families(generate_latest(registry).decode())  # the scrape settles the requests
    hist = found["greenml_request_energy_joules"]
    samples = {(s.name, s.labels["route"], s.labels.get("le")): s.value for s in hist.samples}
    assert samples[("greenml_request_energy_joules_count", "GET /a", None)] == 2
    assert samples[("greenml_request_energy_joules_sum", "GET /a", None)] == pytest.approx(250.0)
    assert samples[("greenml_request_energy_joules_bucket", "GET /a", "30.0")] == 0
    assert samples[("greenml_request_energy_joules_bucket", "GET /a", "100.0")] == 1  # 50 J
    assert samples[("greenml_request_energy_joules_bucket", "GET /a", "300.0")] == 2  # 200 J
    assert samples[("greenml_request_energy_joules_bucket", "GET /b", "10.0")] == 1  # 5 J
    labels = hist.samples[0].labels
    assert labels["method"] == "power-integrated"
    assert (labels["host"], labels["greenml_job"]) == ("node1", "api")
    total = {s.labels["route"]: s.value for s in found["greenml_requests"].samples}
    assert total == {"GET /a": 2.0, "GET /b": 1.0}
    (idle,) = found["greenml_serving_idle_energy_joules"].samples
    assert idle.value == pytest.approx(1000.0 - 255.0)


def test_metrics_appear_on_the_exporters_endpoint(clock: ManualClock) -> None:
    meter = fake_meter(clock, [(0.0, 100.0)], record_samples=True)
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    exporter = Exporter(meter, job="api", host="node1", sample=False)
    export_request_metrics(rm, exporter, job="api", host="node1")
    run_requests(clock, rm, meter)
    exporter.step()
    port = exporter.serve("127.0.0.1", 0)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            found = families(response.read().decode())
    finally:
        exporter.close()
    assert "greenml_device_power_watts" in found  # the exporter's own metrics
    counts = [
        s.value
        for s in found["greenml_request_energy_joules"].samples
        if s.name.endswith("_count") and s.labels["route"] == "GET /a"
    ]
    assert counts == [2.0]
