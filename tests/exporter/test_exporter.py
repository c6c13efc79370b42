"""The exporter on 8 fake GPUs, scraped over HTTP on loopback."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from greenml.accounting.intensity import ConstantSource
from greenml.exporter import EXPOSED_NAMES, Exporter
from greenml.measure.meter import Meter
from tests.exporter.conftest import GIB, make_fake_meter


def scrape(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def values(family: Any, suffix: str = "") -> dict[str, float]:
    return {s.labels["device"]: s.value for s in family.samples if s.name.endswith(suffix)}


@pytest.fixture
def served(fake_meter: Meter) -> Any:
    exp = Exporter(
        fake_meter,
        intensity=ConstantSource.user(400.0),
        price_usd_per_kwh=0.25,
        job="train",
        host="node1",
    )
    port = exp.serve("127.0.0.1", 0)
    yield exp, port
    exp.close()


def test_names_types_and_labels(served: Any) -> None:
    exp, port = served
    time.sleep(0.02)
    exp.step()
    families = scrape(port)
    expected = {
        "greenml_device_power_watts": "gauge",
        "greenml_device_energy_joules": "counter",
        "greenml_device_utilization_ratio": "gauge",
        "greenml_device_sm_activity_ratio": "gauge",
        "greenml_device_memory_used_bytes": "gauge",
        "greenml_grid_intensity_grams_per_kwh": "gauge",
        "greenml_emissions_grams": "counter",
        "greenml_cost_usd": "counter",
    }
    assert {name: families[name].type for name in expected} == expected
    exposed = {s.name for f in families.values() for s in f.samples}
    assert exposed == EXPOSED_NAMES
    power = families["greenml_device_power_watts"]
    assert len(power.samples) == 9
    first = power.samples[0]
    assert first.labels == {
        "host": "node1",
        "device": "gpu0",
        "component": "gpu",
        "model": "Fake H100",
        "method": "counter",
        "greenml_job": "train",
    }
    assert values(power)["gpu7"] == 307.0
    assert values(power)["cpu0"] == 100.0
    assert values(families["greenml_device_memory_used_bytes"])["gpu3"] == 40 * GIB
    assert values(families["greenml_device_sm_activity_ratio"])["gpu6"] == 0.08
    assert "cpu0" not in values(families["greenml_device_sm_activity_ratio"])
    intensity = families["greenml_grid_intensity_grams_per_kwh"].samples
    assert len(intensity) == 1
    assert intensity[0].value == 400.0
    assert intensity[0].labels["source"] == "given by the user"


def test_energy_increases_and_emissions_follow(served: Any) -> None:
    exp, port = served
    time.sleep(0.02)
    exp.step()
    t0 = time.monotonic()
    before = values(scrape(port)["greenml_device_energy_joules"], "_total")
    time.sleep(0.05)
    exp.step()
    elapsed = time.monotonic() - t0  # what the step covered, however busy the machine
    families = scrape(port)
    after = values(families["greenml_device_energy_joules"], "_total")
    assert all(after[k] > before[k] > 0 for k in before)
    assert after["gpu0"] - before["gpu0"] == pytest.approx(300.0 * elapsed, rel=0.5)
    emissions = values(families["greenml_emissions_grams"], "_total")
    cost = values(families["greenml_cost_usd"], "_total")
    for key, joules in after.items():
        assert emissions[key] == pytest.approx(joules / 3.6e6 * 400.0, rel=1e-9)
        assert cost[key] == pytest.approx(joules / 3.6e6 * 0.25, rel=1e-9)


def test_scrape_reads_no_sensor(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    exp, port = served
    exp.step()
    calls = []
    for sensor in exp.meter._sensors:
        for name in ("read_power_w", "read_energy_j", "read_metrics"):
            real = getattr(sensor, name)
            monkeypatch.setattr(sensor, name, lambda real=real: calls.append(1) or real())
    scrape(port)
    scrape(port)
    assert calls == []


def test_without_intensity_or_price_no_carbon_metrics(fake_meter: Meter) -> None:
    with Exporter(fake_meter) as exp:
        port = exp.serve("127.0.0.1", 0)
        families = scrape(port)
    assert "greenml_device_power_watts" in families
    for name in (
        "greenml_emissions_grams",
        "greenml_cost_usd",
        "greenml_grid_intensity_grams_per_kwh",
    ):
        assert name not in families


def test_run_loop_ticks_until_stopped(fake_meter: Meter) -> None:
    exp = Exporter(fake_meter, interval_s=0.01)
    stop = threading.Event()
    thread = threading.Thread(target=exp.run, args=(stop,))
    thread.start()
    time.sleep(0.1)
    stop.set()
    thread.join(timeout=2)
    assert not thread.is_alive()
    assert exp.state.snapshot.devices[0].energy_j > 0


def _taken_port() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock, sock.getsockname()[1]


def _use_fake_meter(monkeypatch: pytest.MonkeyPatch) -> None:
    import greenml.cli.app
    import greenml.cli.exporter

    monkeypatch.setattr(
        greenml.cli.app,
        "COMMANDS",
        {**greenml.cli.app.COMMANDS, "exporter": "greenml.cli.exporter:exporter"},
    )
    monkeypatch.setattr(greenml.cli.exporter, "make_meter", lambda interval: make_fake_meter())


def test_cli_port_taken_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.cli import main

    _use_fake_meter(monkeypatch)
    sock, port = _taken_port()
    try:
        code = main(["exporter", "--port", str(port), "--ci", "300"])
    finally:
        sock.close()
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().count("\n") == 0
    assert f"port {port}" in err and "already in use" in err
    assert "Traceback" not in err


def test_cli_serves_then_stops_cleanly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.cli import main

    _use_fake_meter(monkeypatch)
    sock, port = _taken_port()
    sock.close()
    result: dict[str, Any] = {}

    def scrape_soon() -> None:
        time.sleep(0.3)
        result["families"] = scrape(port)

    thread = threading.Thread(target=scrape_soon)
    thread.start()
    code = main(
        [
            "exporter",
            "--port",
            str(port),
            "--ci",
            "300",
            "--price",
            "0.1",
            "--sample-hz",
            "20",
            "--duration",
            "0.6",
            "--job",
            "cli",
        ]
    )
    thread.join(timeout=5)
    assert code == 0
    families = result["families"]
    sample = families["greenml_cost_usd"].samples[0]
    assert sample.labels["greenml_job"] == "cli" and sample.value > 0
    assert "Traceback" not in capsys.readouterr().err


def test_cli_sigterm_exits_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import signal

    from greenml.cli import main

    _use_fake_meter(monkeypatch)
    sock, port = _taken_port()
    sock.close()
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    start = time.monotonic()
    code = main(["exporter", "--port", str(port), "--sample-hz", "20"])
    timer.join()
    assert code == 0
    assert time.monotonic() - start < 5
    assert signal.getsignal(signal.SIGTERM) is not None
