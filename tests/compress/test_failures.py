"""Bad input and broken variants: skipped or failed with the reason, the rest go on."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import nn

from greenml.compress import compress
from greenml.errors import ConfigError
from greenml.measure.meter import Meter
from tests.compress.conftest import FAST, Task


class Branchy(nn.Module):
    """Data-dependent Python control flow: torch.export refuses it, a trace would bake a branch."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(8, 3)
        self.b = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return self.a(x)
        return self.b(x)


def test_an_evaluate_that_raises_fails_only_that_variant(task: Task, meter: Meter) -> None:
    calls: list[int] = []

    def evaluate(predict: Any) -> float:
        calls.append(1)
        if len(calls) == 2:  # baseline, then int8 (the order of the techniques)
            raise ValueError("labels file vanished")
        return task.evaluate(predict)

    result = compress(task.model, evaluate, task.example_inputs, techniques="int8,bf16",
                      meter=meter, repeats=2, options=FAST)  # fmt: skip
    int8 = result.variant("int8")
    assert int8.status == "failed"
    assert "evaluate raised ValueError: labels file vanished" in int8.reason
    assert int8.energy_per_1k_j is None
    for name in ("baseline", "bf16"):
        assert result.variant(name).ok
        assert result.variant(name).energy_per_1k_j is not None
    assert result.recommendation.variant in ("baseline", "bf16")


def test_an_evaluate_returning_no_number_fails_the_variant(task: Task, meter: Meter) -> None:
    def evaluate(predict: Any) -> Any:
        return {"accuracy": 97.0}

    result = compress(task.model, evaluate, task.example_inputs, techniques="int8",
                      meter=meter, repeats=1, options=FAST)  # fmt: skip
    assert result.baseline.status == "failed"
    assert "not a finite accuracy" in result.baseline.reason
    assert result.recommendation.variant is None
    assert "baseline's accuracy is unknown" in result.recommendation.reason


def test_an_unexportable_model_skips_both_onnx_backends(meter: Meter) -> None:
    model = Branchy().eval()
    x = torch.randn(4, 8)
    result = compress(model, lambda predict: 50.0, x, techniques="onnx,onnx-int8",
                      meter=meter, repeats=1, options=FAST)  # fmt: skip
    onnx, onnx8 = result.variant("onnx"), result.variant("onnx-int8")
    assert onnx.status == "skipped" and onnx8.status == "skipped"
    assert "torch.export failed" in onnx.reason
    assert "data-dependent" in onnx.reason
    assert "needs the ONNX export" in onnx8.reason
    assert result.baseline.ok and result.baseline.energy_per_1k_j is not None


def test_distill_without_training_data_is_skipped(task: Task, meter: Meter) -> None:
    result = compress(task.model, task.evaluate, task.example_inputs, techniques="distill",
                      meter=meter, repeats=1, options=FAST)  # fmt: skip
    assert result.variant("distill").status == "skipped"
    assert "train_data" in result.variant("distill").reason


def test_int8_on_a_model_without_linear_layers_is_skipped(meter: Meter) -> None:
    model = nn.Sequential(nn.Conv1d(1, 2, 3), nn.Flatten()).eval()
    result = compress(model, lambda predict: 10.0, torch.randn(2, 1, 8), techniques="int8",
                      meter=meter, repeats=1, options=FAST)  # fmt: skip
    assert result.variant("int8").status == "skipped"
    assert "no nn.Linear" in result.variant("int8").reason


def test_a_model_that_fails_on_its_inputs_is_a_config_error(task: Task, meter: Meter) -> None:
    with pytest.raises(ConfigError, match="fails on its example_inputs"):
        compress(task.model, task.evaluate, torch.randn(4, 3), meter=meter, options=FAST)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"techniques": "int8,zip"}, "unknown technique 'zip'"),
        ({"techniques": " , "}, "no technique"),
        ({"max_accuracy_drop": -1.0}, "max_accuracy_drop"),
        ({"max_accuracy_drop": float("nan")}, "max_accuracy_drop"),
        ({"repeats": 0}, "repeats"),
    ],
)
def test_bad_arguments_are_config_errors(
    task: Task, meter: Meter, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        compress(task.model, task.evaluate, task.example_inputs, meter=meter, **kwargs)


def test_example_inputs_must_be_tensors(task: Task, meter: Meter) -> None:
    with pytest.raises(ConfigError, match="example_inputs"):
        compress(task.model, task.evaluate, [[1.0] * 16], meter=meter)
