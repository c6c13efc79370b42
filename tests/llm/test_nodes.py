"""Engines that span nodes: the other nodes' reported totals join the proxy's energy."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.llm.nodes import CompositeSource, RemoteNodes
from tests.llm.conftest import Engine
from tests.llm.engine import free_port, prompt

SRC = Path(__file__).resolve().parents[2] / "src"
REPORT = {"total_j": 10.0, "method": "counter", "uncertainty_rel": 0.05, "scope": "GPUs"}


def test_a_nodes_energy_counts_from_its_first_report_and_survives_a_restart() -> None:
    nodes = RemoteNodes(["n2"])
    nodes.report("n2", {**REPORT, "total_j": 100.0}, now=0.0)
    assert nodes.total_j() == 0.0  # energy before the proxy heard of it is not counted
    nodes.report("n2", {**REPORT, "total_j": 130.0}, now=1.0)
    nodes.report("n2", {**REPORT, "total_j": 5.0}, now=2.0)  # its agent restarted
    nodes.report("n2", {**REPORT, "total_j": 25.0}, now=3.0)
    assert nodes.total_j() == pytest.approx(50.0)
    assert nodes.status(now=4.0)["n2"]["silent"] is False
    assert nodes.status(now=9.0)["n2"]["silent"] is True  # named, never a silent zero


@pytest.mark.parametrize("bad", [
    [], {"total_j": -1, "method": "counter"}, {"total_j": float("nan"), "method": "counter"},
    {"total_j": True, "method": "counter"}, {"total_j": 1, "method": "guessed"},
    {"total_j": 1, "method": "counter", "uncertainty_rel": -0.1},
    {"total_j": 1, "method": "counter", "scope": "x" * 501},
])  # fmt: skip
def test_a_bad_report_or_an_unknown_node_is_refused(bad: Any) -> None:
    nodes = RemoteNodes(["n2"])
    with pytest.raises(ConfigError):
        nodes.report("n2", bad)
    with pytest.raises(ConfigError, match="unknown node"):
        nodes.report("n3", REPORT)
    assert nodes.total_j() == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 1e6), max_size=40))
def test_the_total_never_goes_backwards(totals: list[float]) -> None:
    nodes = RemoteNodes(["a"])
    seen = 0.0
    for t in totals:
        nodes.report("a", {**REPORT, "total_j": t})
        assert nodes.total_j() >= seen - 1e-6
        seen = nodes.total_j()


class Local:
    method, uncertainty_rel, scope = "power-integrated", 0.12, "GPUs of this node"

    def total_j(self) -> float:
        return 7.0

    def close(self) -> None:
        pass


def test_the_composite_source_is_the_weakest_method_and_the_widest_band() -> None:
    nodes = RemoteNodes(["n2"])
    source = CompositeSource(Local(), nodes)
    assert source.method == "power-integrated" and "nodes n2" in source.scope
    nodes.report("n2", {**REPORT, "method": "estimated", "uncertainty_rel": 0.3})
    nodes.report("n2", {**REPORT, "method": "estimated", "uncertainty_rel": 0.3, "total_j": 13.0})
    assert source.method == "estimated" and source.uncertainty_rel == 0.3
    assert source.total_j() == pytest.approx(10.0)


def _start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "greenml", "llm", *cmd], stdout=out,
                                stderr=subprocess.STDOUT, env=env)  # fmt: skip


@pytest.mark.timeout(600)
def test_a_second_node_reports_and_its_energy_is_shared_out(engine: Engine, tmp_path: Path) -> None:
    env = {**os.environ, "GREENML_NODE_TOKEN": "s3cret",
           "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}  # fmt: skip
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])  # node 2's engine part
    proxy = _start(["proxy", "--upstream", engine.url, "--port", str(port), "--engine-pid",
                    str(engine.pid), "--db", f"sqlite:///{tmp_path / 'p.db'}", "--node", "n2"],
                   env, tmp_path / "proxy.log")  # fmt: skip
    node = None
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + "/greenml/ledger", timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline and proxy.poll() is None
                time.sleep(0.3)
        node = _start(["node", "--proxy", url, "--name", "n2", "--engine-pid", str(burner.pid)],
                      env, tmp_path / "node.log")  # fmt: skip
        time.sleep(2)
        client = openai.OpenAI(base_url=url + "/v1", api_key="k", timeout=600, max_retries=0)
        for i in range(3):
            client.chat.completions.create(
                model=engine.model, max_tokens=6, temperature=0,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": prompt(8, i)}],
            )  # fmt: skip
        time.sleep(1)
        doc = httpx.get(url + "/greenml/ledger", timeout=10).json()
        n2 = doc["nodes"]["n2"]
        assert n2["energy_j"] > 0 and n2["silent"] is False and n2["method"] == "estimated"
        assert "nodes n2" in doc["scope"]
        assert doc["metered_j"] > n2["energy_j"] * 0.5  # the proxy's total holds node 2's part
        assert doc["attributed_j"] + doc["idle_j"] + doc["pending_j"] == pytest.approx(
            doc["metered_j"], rel=1e-9)  # fmt: skip
        wrong = httpx.post(url + "/greenml/nodes/n2", json=REPORT,
                           headers={"Authorization": "Bearer nope"})  # fmt: skip
        assert wrong.status_code == 401
        node.send_signal(signal.SIGTERM)
        assert node.wait(timeout=30) == 0
        time.sleep(6)
        assert httpx.get(url + "/greenml/ledger", timeout=10).json()["nodes"]["n2"]["silent"]
        refused = subprocess.run(
            [sys.executable, "-m", "greenml", "llm", "node", "--proxy", url, "--name", "n9"],
            capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        assert refused.returncode == 2 and "unknown node" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) <= 2 and "Traceback" not in refused.stderr
    finally:
        for p in (node, proxy, burner):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
