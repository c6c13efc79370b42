"""The plain-loop helper: interval in work seconds, policy feedback, resume, interruption, exit."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.resilience.checkpointer import Checkpointer, SaveResult
from greenml.resilience.interval import daly_interval_s
from greenml.resilience.loop import resilient_steps
from greenml.resilience.policy import Adaptive, FixedInterval, YoungDaly
from greenml.resilience.session import Interrupts
from greenml.resilience.signals import EXIT_REQUEUE, InterruptGuard
from tests.resilience.conftest import Clock

torch = pytest.importorskip("torch")


class SlowCheckpointer(Checkpointer):
    """A checkpointer whose saves take ``cost_s`` of the fake clock."""

    def __init__(self, path: Path, clock: Clock, cost_s: float, **kwargs: Any) -> None:
        super().__init__(path, **kwargs)
        self.clock = clock
        self.cost_s = cost_s

    def save(self, state: Any, **kwargs: Any) -> SaveResult:
        self.clock.now_s += self.cost_s
        return super().save(state, **kwargs)


def _manifests(root: Path) -> dict[int, dict[str, Any]]:
    found = {}
    for folder in sorted(root.glob("step-*")):
        doc = json.loads((folder / "manifest.json").read_text())
        found[doc["step"]] = doc
    return found


def test_checkpoints_follow_the_interval_in_work_seconds(tmp_path: Path) -> None:
    clock = Clock(100.0)
    ckpt = SlowCheckpointer(tmp_path, clock, cost_s=5.0, keep=10)
    state = {"n": 0}
    work = Interrupts(clock=clock)
    for _ in resilient_steps(
        10, ckpt, data_state=state, policy=FixedInterval(3.0), interrupts=work
    ):
        state["n"] += 1
        clock.now_s += 1.0  # one second of work per step
    found = _manifests(tmp_path)
    # Saves take 5 s each, yet they do not count as work: still every 3 steps.
    assert sorted(found) == [3, 6, 9, 10]
    assert [found[s]["reason"] for s in (3, 6, 9, 10)] == ["periodic"] * 3 + ["final"]
    assert found[10]["extra"]["policy"]["name"] == "fixed"


def test_young_daly_sets_the_interval(tmp_path: Path) -> None:
    clock = Clock(100.0)
    policy = YoungDaly(checkpoint_cost_s=2.0, interruptions_per_hour=3600 / 50)
    expected = math.ceil(daly_interval_s(2.0, 50.0))
    ckpt = Checkpointer(tmp_path, keep=10)
    for _ in resilient_steps(30, ckpt, policy=policy, interrupts=Interrupts(clock=clock)):
        clock.now_s += 1.0
    assert sorted(_manifests(tmp_path))[0] == expected


def test_the_adaptive_policy_learns_the_cost_and_keeps_it_across_restarts(tmp_path: Path) -> None:
    clock = Clock(100.0)
    guard = InterruptGuard(signals=())
    first = Adaptive(initial_cost_s=1.0, prior_per_hour=0.5, prior_hours=2.0)
    ckpt = SlowCheckpointer(tmp_path, clock, cost_s=5.0, keep=10)
    seen = []
    steps = resilient_steps(
        12, ckpt, policy=first, interrupts=Interrupts(guard=guard, exit_code=None, clock=clock)
    )
    for step in steps:
        seen.append(step)
        clock.now_s += 10.0
        if step == 6:
            guard.request("test interruption", budget_s=60.0)
    assert seen == list(range(7))
    # Measured saves of 5 s moved the cost estimate from 1 s towards 5 s.
    assert first.cost_s > 1.0
    emergency = _manifests(tmp_path)[7]
    assert emergency["reason"] == "emergency"
    saved = emergency["extra"]["policy"]["state"]
    assert saved["alpha"] == pytest.approx(1.0)  # 0.5/h × 2 h, no interruption yet
    assert saved["beta_h"] > 2.0  # the hours run were added

    second = Adaptive(initial_cost_s=1.0, prior_per_hour=0.5, prior_hours=2.0)
    quiet = Interrupts(handle_signals=False, clock=clock)
    resumed = list(resilient_steps(12, ckpt, policy=second, interrupts=quiet))
    assert resumed[0] == 7
    assert second.state_dict()["alpha"] == pytest.approx(saved["alpha"] + 1.0)
    assert second.state_dict()["beta_h"] >= saved["beta_h"]

    third = Adaptive(initial_cost_s=1.0, prior_per_hour=0.5, prior_hours=2.0)
    no_signals = Interrupts(handle_signals=False)
    assert list(resilient_steps(12, ckpt, policy=third, interrupts=no_signals)) == []
    final = _manifests(tmp_path)[12]["extra"]["policy"]["state"]
    assert third.state_dict()["alpha"] == pytest.approx(final["alpha"])


def test_a_real_sigterm_ends_the_loop_with_the_requeue_code(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM)
    model = torch.nn.Linear(2, 2)
    ran = []
    with pytest.raises(SystemExit) as stop:
        for step in resilient_steps(50, Checkpointer(tmp_path, async_mode=True), model=model):
            ran.append(step)
            if step == 3:
                os.kill(os.getpid(), signal.SIGTERM)
    assert stop.value.code == EXIT_REQUEUE
    assert ran == [0, 1, 2, 3]
    assert signal.getsignal(signal.SIGTERM) == before
    loaded = Checkpointer(tmp_path).load_latest()  # the async save was finished before exiting
    assert loaded is not None and loaded.info.step == 4 and loaded.info.reason == "emergency"
    assert torch.equal(loaded.state["model"]["weight"], model.weight)


def test_resuming_with_another_model_names_the_keys(tmp_path: Path) -> None:
    list(resilient_steps(2, Checkpointer(tmp_path), model=torch.nn.Linear(3, 4)))
    with pytest.raises(ConfigError, match=r"weight \(checkpoint \[4, 3\], model \[5, 3\]\)"):
        list(resilient_steps(4, Checkpointer(tmp_path), model=torch.nn.Linear(3, 5)))


def test_a_failed_save_stops_training(tmp_path: Path) -> None:
    class Broken(Checkpointer):
        def save(self, state: Any, **kwargs: Any) -> SaveResult:
            from greenml.errors import CheckpointError

            raise CheckpointError("cannot write checkpoint: no space left on the device")

    clock = Clock(100.0)
    ran = []
    with pytest.raises(Exception, match="no space left"):
        steps = resilient_steps(
            9, Broken(tmp_path), policy=FixedInterval(2.0), interrupts=Interrupts(clock=clock)
        )
        for step in steps:
            ran.append(step)
            clock.now_s += 1.0
    assert ran == [0, 1]


def test_bad_arguments(tmp_path: Path) -> None:
    from greenml.resilience.state import TrainingState

    with pytest.raises(ConfigError, match="not both"):
        next(resilient_steps(3, Checkpointer(tmp_path), state=TrainingState(), model=object()))
    with pytest.raises(ConfigError, match="total_steps"):
        next(resilient_steps(-1, Checkpointer(tmp_path)))
    with pytest.raises(ConfigError, match="exit code"):
        next(resilient_steps(3, Checkpointer(tmp_path), interrupts=Interrupts(exit_code=300)))
