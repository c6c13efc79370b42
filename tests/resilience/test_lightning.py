"""The Lightning callback: periodic checkpoints, SIGTERM → checkpoint + exit 75, exact resume."""

from __future__ import annotations

import json
import logging
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from greenml.resilience.policy import FixedInterval
from greenml.resilience.session import Interrupts
from greenml.resilience.signals import EXIT_REQUEUE
from tests.resilience.conftest import Clock, dropout_net

torch = pytest.importorskip("torch")
pl = pytest.importorskip("pytorch_lightning")

from greenml.resilience.lightning import ResilienceCallback  # noqa: E402

MAX_STEPS = 8


class Tiny(pl.LightningModule):  # type: ignore[misc]
    """A linear model with dropout; each step is one second of the fake clock."""

    def __init__(self, clock: Clock, kill_at_step: int | None = None) -> None:
        super().__init__()
        self.net = dropout_net()
        self.clock = clock
        self.kill_at_step = kill_at_step

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        if self.global_step == self.kill_at_step:
            os.kill(os.getpid(), signal.SIGTERM)
        self.clock.now_s += 1.0
        x, y = batch
        return ((self.net(x) - y) ** 2).mean()

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)


def _fit(directory: Path, kill_at_step: int | None = None) -> tuple[Tiny, ResilienceCallback]:
    torch.manual_seed(0)
    clock = Clock()
    model = Tiny(clock, kill_at_step)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8)  # 4 steps per epoch
    callback = ResilienceCallback(
        str(directory), policy=FixedInterval(3.0), interrupts=Interrupts(clock=clock)
    )
    callback.checkpointer.keep = 10
    trainer = pl.Trainer(
        max_steps=MAX_STEPS,
        callbacks=[callback],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        devices=1,
    )
    trainer.fit(model, loader, ckpt_path=callback.resume_path())
    return model, callback


def _steps(directory: Path) -> dict[int, str]:
    found = {}
    for folder in directory.glob("step-*"):
        if (folder / "manifest.json").exists():
            doc = json.loads((folder / "manifest.json").read_text())
            found[doc["step"]] = doc["reason"]
    return dict(sorted(found.items()))


def test_sigterm_checkpoints_exits_75_and_resumes_to_the_same_weights(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="greenml")
    reference, _ = _fit(tmp_path / "reference")
    assert _steps(tmp_path / "reference") == {3: "periodic", 6: "periodic", 8: "final"}

    before = signal.getsignal(signal.SIGTERM)
    interrupted = tmp_path / "interrupted"
    with pytest.raises(SystemExit) as stop:
        _fit(interrupted, kill_at_step=3)  # SIGTERM during the epoch's last batch
    assert stop.value.code == EXIT_REQUEUE
    assert signal.getsignal(signal.SIGTERM) == before
    assert _steps(interrupted) == {3: "periodic", 4: "emergency"}
    assert "SIGTERM: emergency checkpoint of step 4" in caplog.text

    (interrupted / "step-0000000009").mkdir()  # a partial save from some later crash
    resumed, callback = _fit(interrupted)
    assert "step-0000000009: no manifest" in caplog.text
    assert _steps(interrupted) == {3: "periodic", 4: "emergency", 7: "periodic", 8: "final"}
    for key, value in reference.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
    assert callback.session.cadence.checkpoints == 2
