"""Collecting and restoring the full training state, and refusing another model's checkpoint."""

from __future__ import annotations

import io
import random

import numpy as np
import pytest

from greenml.errors import ConfigError
from greenml.resilience.state import TrainingState, capture_rng, check_model_state, restore_rng

torch = pytest.importorskip("torch")


def _objects(seed: int, hidden: int = 6) -> TrainingState:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(3, hidden), torch.nn.Linear(hidden, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return TrainingState(
        model=model,
        optimizer=optimizer,
        scheduler=torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5),
        scaler=torch.amp.GradScaler("cpu", init_scale=1024.0),
        generator=torch.Generator().manual_seed(seed),
        data_state={"cursor": 0},
    )


def _train(state: TrainingState, steps: int) -> None:
    for _ in range(steps):
        x = torch.randn(4, 3, generator=state.generator)
        loss = state.model(x).pow(2).mean()
        state.optimizer.zero_grad()
        state.scaler.scale(loss).backward()
        state.scaler.step(state.optimizer)
        state.scaler.update()
        state.scheduler.step()
        assert state.data_state is not None
        state.data_state["cursor"] += 4


def _roundtrip(payload: dict[str, object]) -> dict[str, object]:
    """Through torch.save and the safe loader, as a checkpoint file would go."""
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    buffer.seek(0)
    loaded: dict[str, object] = torch.load(buffer, weights_only=True)
    return loaded


def test_restore_continues_exactly_where_the_saved_run_was() -> None:
    saved = _objects(seed=1)
    _train(saved, 3)
    payload = _roundtrip(saved.collect(step=3, epoch=1))
    # What the saved run does next, RNG draws included.
    _train(saved, 2)
    expected_draws = (random.random(), float(np.random.rand()), torch.rand(2))

    fresh = _objects(seed=99)  # other weights, other generator, other position
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    step, epoch = fresh.restore(payload)
    assert (step, epoch) == (3, 1)
    assert fresh.data_state == {"cursor": 12}
    assert fresh.scheduler.last_epoch == 3
    _train(fresh, 2)
    draws = (random.random(), float(np.random.rand()), torch.rand(2))

    for key, value in saved.model.state_dict().items():
        assert torch.equal(value, fresh.model.state_dict()[key]), key
    assert fresh.optimizer.param_groups[0]["lr"] == saved.optimizer.param_groups[0]["lr"]
    assert fresh.scaler.get_scale() == saved.scaler.get_scale()
    assert draws[:2] == expected_draws[:2]
    assert torch.equal(draws[2], expected_draws[2])


def test_another_model_is_refused_naming_the_keys_and_nothing_is_changed() -> None:
    saved = _objects(seed=1, hidden=6)
    payload = _roundtrip(saved.collect(step=1))
    other = _objects(seed=2, hidden=5)
    before = {k: v.clone() for k, v in other.model.state_dict().items()}
    with pytest.raises(ConfigError) as error:
        other.restore(payload)
    message = str(error.value)
    assert "another model" in message
    assert "0.weight (checkpoint [6, 3], model [5, 3])" in message
    assert "1.weight (checkpoint [2, 6], model [2, 5])" in message
    assert "0.bias" in message
    for key, value in other.model.state_dict().items():
        assert torch.equal(value, before[key]), "restore changed the model before refusing"


def test_missing_and_unexpected_keys_are_named() -> None:
    expected = {"a.weight": torch.zeros(2, 2), "b.weight": torch.zeros(3)}
    saved = {"a.weight": torch.zeros(2, 2), "c.bias": torch.zeros(1)}
    pattern = r"missing from the checkpoint: b\.weight.*not in the model: c\.bias"
    with pytest.raises(ConfigError, match=pattern):
        check_model_state(expected, saved)
    check_model_state(expected, dict(expected))  # same keys and shapes: accepted


def test_a_checkpoint_without_an_objects_state_is_refused() -> None:
    payload = _roundtrip(TrainingState(model=_objects(1).model).collect(step=4))
    full = _objects(1)
    with pytest.raises(ConfigError, match="no state for: optimizer, scheduler, scaler, generator"):
        full.restore(payload)


def test_rng_capture_is_loadable_with_weights_only_and_replays() -> None:
    state = _roundtrip({"rng": capture_rng()})["rng"]
    first = (random.getrandbits(64), int(np.random.randint(1 << 30)), torch.randint(1 << 30, (3,)))
    restore_rng(state)  # type: ignore[arg-type]
    again = (random.getrandbits(64), int(np.random.randint(1 << 30)), torch.randint(1 << 30, (3,)))
    assert first[:2] == again[:2]
    assert torch.equal(first[2], again[2])
