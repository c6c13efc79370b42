"""The label harness: fixed queries and batch, warm-up excluded, the label from measured Wh."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.report.label_bench import bench_label, queries_for, run_bench


class TickingClock:
    """Each reading moves time on by 10 ms: energy grows with the work done."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.01
        return self.t


def meter(component: str = "gpu0", watts: float = 50.0) -> Meter:
    clock = TickingClock()
    sensor = FakeSensor([FakeDevice(component, [(0.0, watts)])], clock=clock)
    return Meter(sensors=[sensor], sample_hz=0, clock=clock)


def test_queries_are_fixed_and_labelled() -> None:
    texts, labels = queries_for("text_classification", 50)
    assert (texts, labels) == queries_for("text_classification", 50)
    assert len(texts) == 50 and set(labels) == {0, 1}
    with pytest.raises(ConfigError, match="offline tasks"):
        queries_for("image_generation", 5)


def test_a_gpu_bench_is_labelled_from_its_measured_window() -> None:
    result = run_bench(model="hashing", queries=40, batch_size=4, warmup=8, meter=meter())
    assert result.scope == "gpu"
    joules = result.measurement.components["gpu"].energy_j
    assert joules > 0
    assert result.wh_per_1000 == pytest.approx(joules / 3600 * 1000 / 40)
    report = bench_label(result)
    assert report.data["wh_per_1000_queries"] == pytest.approx(result.wh_per_1000)
    assert report.data["energy_scope"] == "gpu" and 1 <= report.data["stars"] <= 5
    assert "8 warm-up queries" in report.sections[0].paragraphs[0]


def test_a_cpu_bench_says_it_is_not_like_for_like() -> None:
    result = run_bench(model="hashing", queries=10, warmup=0, meter=meter("cpu0"))
    assert result.scope == "total"
    assert any("not like-for-like" in n for n in result.notes)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"queries": 0}, ">= 1"), ({"batch_size": 0}, ">= 1"), ({"warmup": -1}, "warm-up")],
)
def test_bad_counts_are_config_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run_bench(model="hashing", meter=meter(), **kwargs)


def test_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["label", "bench", "--model", "hashing", "--queries", "20", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["bench"]["queries"] == 20 and data["task_class"] == "text_classification"
    assert main(["label", "bench", "--model", "hashing", "--queries", "2.5"]) == 2
    assert main(["label", "bench", "--task-class", "object_detection", "--model", "hashing"]) == 2
    assert capsys.readouterr().err.count("\n") == 2
