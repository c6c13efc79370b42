"""The Hugging Face Trainer callback: sealed checkpoints, SIGTERM → exit 75, exact resume."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from greenml.resilience.policy import FixedInterval
from greenml.resilience.session import Interrupts
from greenml.resilience.signals import EXIT_REQUEUE
from tests.resilience.conftest import Clock, dropout_net

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from greenml.resilience.hf import ResilienceTrainerCallback, latest_checkpoint  # noqa: E402

MAX_STEPS = 8


class Pairs(torch.utils.data.Dataset):  # type: ignore[misc]
    def __init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(48, 4, generator=g)
        self.y = torch.randn(48, 1, generator=g)

    def __len__(self) -> int:
        return 48

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {"x": self.x[i], "labels": self.y[i]}


class Tiny(torch.nn.Module):  # type: ignore[misc]
    """Dropout + linear; each forward is one second of the fake clock."""

    def __init__(self, clock: Clock, kill_at_call: int | None) -> None:
        super().__init__()
        self.net = dropout_net()
        self.clock = clock
        self.kill_at_call = kill_at_call
        self.calls = 0

    def forward(self, x: Any, labels: Any = None) -> dict[str, Any]:
        self.calls += 1
        if self.calls == self.kill_at_call:
            os.kill(os.getpid(), signal.SIGTERM)
        self.clock.now_s += 1.0
        out = self.net(x)
        return {"loss": ((out - labels) ** 2).mean(), "logits": out}


def _train(output_dir: Path, kill_at_call: int | None = None) -> Tiny:
    torch.manual_seed(0)
    clock = Clock()
    model = Tiny(clock, kill_at_call)
    args = transformers.TrainingArguments(
        output_dir=str(output_dir),
        max_steps=MAX_STEPS,
        per_device_train_batch_size=16,  # 3 steps per epoch: resumes mid-epoch
        learning_rate=0.05,
        save_strategy="no",
        logging_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    callback = ResilienceTrainerCallback(
        policy=FixedInterval(3.0), interrupts=Interrupts(clock=clock), keep=3
    )
    trainer = transformers.Trainer(
        model=model, args=args, train_dataset=Pairs(), callbacks=[callback]
    )
    trainer.train(resume_from_checkpoint=latest_checkpoint(output_dir))
    return model


def _sealed(output_dir: Path) -> dict[int, str]:
    found = {}
    for folder in output_dir.glob("checkpoint-*"):
        manifest = folder / "manifest.json"
        if manifest.exists():
            doc = json.loads(manifest.read_text())
            assert "model.safetensors" in doc["files"] and "optimizer.pt" in doc["files"]
            found[doc["step"]] = doc["reason"]
    return dict(sorted(found.items()))


def test_sigterm_seals_a_checkpoint_exits_75_and_resumes_exactly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="greenml")
    reference = _train(tmp_path / "reference")
    assert _sealed(tmp_path / "reference") == {3: "periodic", 6: "periodic", 8: "final"}

    out = tmp_path / "interrupted"
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as stop:
        _train(out, kill_at_call=5)  # during the 5th step: checkpoint after it
    assert stop.value.code == EXIT_REQUEUE
    assert signal.getsignal(signal.SIGTERM) == before
    assert _sealed(out) == {3: "periodic", 5: "emergency"}
    assert latest_checkpoint(out) == str(out / "checkpoint-5")

    # A newer folder the Trainer left half-written, and a newer sealed one with a flipped byte.
    (out / "checkpoint-7").mkdir()
    (out / "checkpoint-7" / "trainer_state.json").write_text("{}")
    corrupt = out / "checkpoint-6"
    shutil.copytree(out / "checkpoint-5", corrupt)
    doc = json.loads((corrupt / "manifest.json").read_text())
    doc["step"] = 6
    (corrupt / "manifest.json").write_text(json.dumps(doc))
    weights = corrupt / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    assert latest_checkpoint(out) == str(out / "checkpoint-5")
    assert "checkpoint-7: no manifest" in caplog.text
    assert "checkpoint-6: model.safetensors: checksum mismatch" in caplog.text
    shutil.rmtree(corrupt)
    shutil.rmtree(out / "checkpoint-7")

    resumed = _train(out)
    for key, value in reference.state_dict().items():
        assert torch.equal(value, resumed.state_dict()[key]), key
    assert _sealed(out) == {3: "periodic", 5: "emergency", 8: "final"}
