"""Kepler's per-pod energy from a local Prometheus serving recorded-format answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from greenml.cli import main
from greenml.errors import MetricsSourceError
from greenml.jobs.kepler import pod_energy, pod_query
from greenml.store import open_store
from tests.jobs.builders import node_run

# (metric, namespace, pod) -> joules of increase, as Kepler's counters would give
SERIES = {
    ("kepler_container_package_joules_total", "ml", "train-0"): 5200.0,
    ("kepler_container_dram_joules_total", "ml", "train-0"): 800.0,
    ("kepler_container_package_joules_total", "ml", "train-1"): 4100.0,
}


def _answer(query: str) -> dict[str, Any]:
    """Prometheus's instant-query JSON (resultType vector) for the queries greenml sends."""
    for (metric, ns, pod), value in SERIES.items():
        if query == pod_query(metric, ns, pod, 100.0):
            return {"status": "success", "data": {"resultType": "vector", "result": [
                {"metric": {}, "value": [1767225700.0, str(value)]}]}}  # fmt: skip
    if "pod_name=" not in query:
        return {"status": "error", "errorType": "bad_data", "error": "parse error"}
    return {"status": "success", "data": {"resultType": "vector", "result": []}}


@pytest.fixture
def prometheus() -> Iterator[tuple[str, list[dict[str, list[str]]]]]:
    asked: list[dict[str, list[str]]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            params = parse_qs(url.query)
            asked.append(params)
            body = _answer(params["query"][0]) if url.path == "/api/v1/query" else {}
            status = 200 if body.get("status") == "success" else 400
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


def test_a_pods_cpu_and_dram_energy(prometheus: tuple[str, list[Any]]) -> None:
    url, asked = prometheus
    assert pod_energy(url, "ml", "train-0", 1000.0, 1100.0) == {
        "cpu_package_j": 5200.0, "dram_j": 800.0}  # fmt: skip
    assert pod_energy(url, "ml", "train-1", 1000.0, 1100.0)["dram_j"] is None  # no series
    assert asked[0]["time"] == ["1100.000"]


def test_promql_label_values_are_escaped() -> None:
    q = pod_query("m", 'a"b', "c\\d", 59.2)
    assert q == 'sum(increase(m{container_namespace="a\\"b",pod_name="c\\\\d"}[60s]))'


def test_prometheus_errors_are_one_line() -> None:
    with pytest.raises(MetricsSourceError, match=r"Prometheus http://127\.0\.0\.1:9: query failed"):
        pod_energy("http://127.0.0.1:9", "ml", "x", 0.0, 10.0)


def test_jobs_show_puts_kepler_beside_greenml(
    db_url: str, prometheus: tuple[str, list[Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = prometheus
    with open_store(db_url) as store:
        for r in range(2):
            node_run(store, {"job_id": "k8s-job", "source": "kubernetes", "node": f"n{r}",
                             "node_rank": r, "expected_nodes": 2, "pod": f"train-{r}",
                             "namespace": "ml"}, gpu_j=[1000.0], duration_s=100)  # fmt: skip
    assert main(["jobs", "show", "k8s-job", "--db", db_url, "--kepler", url, "--json"]) == 0
    (kepler,) = json.loads(capsys.readouterr().out)["second_sources"]
    assert kepler["source"] == "kepler via Prometheus" and kepler["status"] == "ok"
    assert kepler["energy_j"] == 5200.0 + 800.0 + 4100.0
    assert [(n["pod"], n["cpu_package_j"], n["dram_j"]) for n in kepler["nodes"]] == [
        ("train-0", 5200.0, 800.0), ("train-1", 4100.0, None)]  # fmt: skip
    assert main(["jobs", "show", "k8s-job", "--db", db_url, "--kepler", "http://127.0.0.1:9"]) == 7
    assert "greenml: error: Prometheus http://127.0.0.1:9: query failed" in capsys.readouterr().err
