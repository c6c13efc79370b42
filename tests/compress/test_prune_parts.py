"""Pieces of pruning and measuring that a CPU can check on its own."""

from __future__ import annotations

import torch
from torch import nn

from greenml.compress import compress
from greenml.compress.prune import mask_2_4, output_layers
from greenml.measure.meter import Meter
from tests.compress.conftest import FAST, Task


def test_the_2_4_mask_keeps_the_two_largest_of_every_four() -> None:
    weight = torch.tensor([[0.1, -0.9, 0.5, 0.0, 3.0, 2.0, -1.0, 0.2]])
    mask = mask_2_4(weight)
    assert mask.tolist() == [[0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]]
    big = mask_2_4(torch.randn(64, 128))
    assert bool((big.reshape(64, 32, 4).sum(dim=-1) == 2).all())


def test_only_the_layers_feeding_the_output_width_are_protected() -> None:
    model = nn.Sequential(nn.Embedding(50, 8), nn.Flatten(), nn.Linear(16, 32), nn.ReLU(),
                          nn.Linear(32, 5))  # fmt: skip
    output = model(torch.randint(0, 50, (3, 2)))
    protected = output_layers(model, output)
    assert protected == [model[0], model[4]]


def test_without_any_sensor_no_energy_is_claimed(task: Task) -> None:
    meter = Meter(sensors=[], sample_hz=0)
    result = compress(task.model, task.evaluate, task.example_inputs, techniques="int8",
                      meter=meter, repeats=1, options=FAST)  # fmt: skip
    base = result.baseline
    assert base.ok and base.energy_per_1k_j is None and base.latency_p50_s is not None
    assert any("no sensor measured energy" in n for n in base.notes)
    assert result.recommendation.variant is None
    assert "no energy was measured" in result.recommendation.reason
