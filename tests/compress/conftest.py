"""Fixtures: a tiny trained classifier, a fake-sensor Meter, fast measurement options."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from greenml.compress import CompressOptions  # noqa: E402
from greenml.measure.measurement import COUNTER  # noqa: E402
from greenml.measure.meter import Meter  # noqa: E402
from greenml.measure.sensors.fake import FakeDevice, FakeSensor  # noqa: E402

FAKE_POWER_W = 40.0


@dataclass
class Task:
    """A small classification task and a trained MLP for it."""

    model: Any
    evaluate: Callable[[Any], float]
    example_inputs: Any
    train_data: tuple[Any, Any]


def make_task(seed: int = 0) -> Task:
    """Four Gaussian blobs in 16 dimensions; an MLP 16→64→64→4 trained to ~100 %."""
    from torch import nn

    generator = torch.Generator().manual_seed(seed)
    centers = torch.randn(4, 16, generator=generator) * 3.0
    labels = torch.arange(4).repeat_interleave(150)
    inputs = centers[labels] + torch.randn(600, 16, generator=generator)
    order = torch.randperm(600, generator=generator)
    inputs, labels = inputs[order], labels[order]
    x_train, y_train, x_test, y_test = inputs[:400], labels[:400], inputs[400:], labels[400:]
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 4))  # fmt: skip
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        loss = nn.functional.cross_entropy(model(x_train), y_train)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()

    def evaluate(predict: Any) -> float:
        return float((predict(x_test).argmax(dim=1) == y_test).float().mean()) * 100.0

    return Task(model, evaluate, x_test[:32], (x_train, y_train))


@pytest.fixture(scope="session")
def task() -> Task:
    return make_task()


class TickClock:
    """A clock that moves 1 ms at every reading: the Meter and its sensor share it.

    The Meter reads its clock, then the sensor's counter; on a busy machine a
    real clock can jump between the two reads and a millisecond window gains
    tens of milliseconds of energy. Sharing a ticking clock makes the window's
    duration and the counter's joules describe the same interval, exactly.
    """

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 1e-3
        return self.now


def fake_meter() -> Meter:
    """A Meter over one fake CPU drawing a constant 40 W, read as an energy counter."""
    clock = TickClock()
    device = FakeDevice("cpu0", [(0.0, FAKE_POWER_W)], name="fake CPU", method=COUNTER,
                        uncertainty_rel=0.02)  # fmt: skip
    return Meter(sensors=[FakeSensor([device], clock=clock)], sample_hz=0, clock=clock)


@pytest.fixture
def meter() -> Iterator[Meter]:
    m = fake_meter()
    yield m
    m.close()


FAST = CompressOptions(rounds=2, min_window_s=0.0, warmup=1, distill_epochs=3, finetune_epochs=1)
