"""A real transformers Trainer (CPU, tiny GPT-2 built from a config) with the greenml callback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from greenml.integrations.hf import GreenmlTrainerCallback  # noqa: E402
from greenml.measure.meter import Meter  # noqa: E402
from tests.fakes.fake_pynvml import FakeNvml  # noqa: E402
from tests.optimize.fake_gpus import expected_choice  # noqa: E402

STEPS_PER_EPOCH, EPOCHS = 12, 2


def tiny_gpt2(nvml: FakeNvml) -> Any:
    """A 1-layer GPT-2 from a config (no download); each forward pass runs on the fake GPU."""
    config = transformers.GPT2Config(
        n_layer=1, n_head=1, n_embd=8, vocab_size=32, n_positions=16, bos_token_id=0,
        eos_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)

    def on_forward(*_: Any) -> None:
        nvml.run_step()

    model.register_forward_hook(on_forward)
    return model


def train(model: Any, callback: GreenmlTrainerCallback, out: Path) -> None:
    ids = torch.randint(0, 32, (2 * STEPS_PER_EPOCH, 8))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = transformers.TrainingArguments(
        output_dir=str(out), per_device_train_batch_size=2, num_train_epochs=EPOCHS,
        report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True,
        disable_tqdm=True, dataloader_num_workers=0,
    )  # fmt: skip
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=[callback])
    trainer.train()


def test_windows_per_step_and_epoch_and_a_tuned_limit(
    nvml: FakeNvml, meter: Meter, tuning: dict[str, Any], tmp_path: Path
) -> None:
    callback = GreenmlTrainerCallback(meter, power_limit=tuning)
    train(tiny_gpt2(nvml), callback, tmp_path / "out")
    steps = [m for m in callback.measurements if m.name == "step"]
    epochs = [m for m in callback.measurements if m.name == "epoch"]
    assert len(steps) == STEPS_PER_EPOCH * EPOCHS and len(epochs) == EPOCHS
    assert all(m.energy_of("gpu") > 0 and m.duration_s > 0 for m in steps)
    assert epochs[0].total_j >= sum(m.total_j for m in steps[:STEPS_PER_EPOCH]) - 1e-3
    optimizer = callback.optimizer
    assert optimizer is not None and optimizer.chosen is not None
    assert optimizer.chosen.power_limit_w == expected_choice(0.5)
    assert nvml.set_calls[-2] == ("GPU-v100-aaaa-0000", expected_choice(0.5))  # applied, kept
    assert nvml.set_calls[-1] == ("GPU-v100-aaaa-0000", 250.0)  # and restored at the end
    assert nvml.gpus[0].power_limit_w == 250.0
    callback.close()  # a second close does nothing
    assert nvml.gpus[0].power_limit_w == 250.0


def test_inside_a_run_the_trainers_logs_carry_the_energy_and_the_run_stores_the_epochs(
    nvml: FakeNvml, tmp_path: Path
) -> None:
    import greenml
    from greenml.measure.sensors.nvml import NvmlSensor

    ids = torch.randint(0, 32, (2 * STEPS_PER_EPOCH, 8))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), per_device_train_batch_size=2, num_train_epochs=EPOCHS,
        report_to=[], save_strategy="no", logging_strategy="epoch", use_cpu=True,
        disable_tqdm=True, dataloader_num_workers=0,
    )  # fmt: skip
    with greenml.Run("hf", ci=400, sensors=[NvmlSensor(nvml=nvml)], sample_hz=0,
                     db=str(tmp_path / "r.db")) as run:  # fmt: skip
        trainer = transformers.Trainer(model=tiny_gpt2(nvml), args=args, train_dataset=data,
                                       callbacks=[GreenmlTrainerCallback()])  # fmt: skip
        trainer.train()
    assert run.record is not None
    epochs = [w for w in run.record.windows if w.name == "epoch"]
    assert len(epochs) == EPOCHS
    history = trainer.state.log_history
    logged = [e["greenml/energy_kwh"] for e in history if "greenml/energy_kwh" in e]
    # logged at each epoch's end: the epochs finished by then
    assert logged[-1] == pytest.approx(sum(w.energy_j for w in epochs) / 3.6e6)
    assert logged[0] == pytest.approx(epochs[0].energy_j / 3.6e6)


def test_a_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    from greenml.errors import MissingExtra

    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "greenml.integrations.hf", raising=False)
    with pytest.raises(MissingExtra, match=r"pip install 'greenml\[transformers\]'"):
        importlib.import_module("greenml.integrations.hf")
    monkeypatch.setitem(sys.modules, "pytorch_lightning", None)
    monkeypatch.setitem(sys.modules, "lightning", None)
    monkeypatch.delitem(sys.modules, "greenml.integrations.lightning", raising=False)
    with pytest.raises(ImportError, match=r"pytorch-lightning.*pip install 'greenml\[lightning\]'"):
        importlib.import_module("greenml.integrations.lightning")
