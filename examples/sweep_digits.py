"""A training step for ``greenml optimize sweep``: an MLP on scikit-learn's digits (offline).

    greenml optimize sweep examples/sweep_digits.py:make_step --batch-size 32,128 \\
        --precision fp32,bf16 --compile off

greenml calls ``make_step(config)`` once per configuration. The factory builds
what depends on the configuration (a data loader for ``config.batch_size`` and
``config.workers``, the model on ``config.device``) and returns the step with
its model, so that greenml can apply the precision and ``torch.compile``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

from greenml.optimize.sweep.run import SweepConfig, TrainStep, grad_scaler


def _batches(loader: DataLoader[Any]) -> Iterator[Any]:
    """Batches forever, epoch after epoch."""
    while True:
        yield from loader


def make_step(config: SweepConfig) -> TrainStep:
    """One AdamW step of a 64-256-256-10 MLP on a batch of 8×8 digit images."""
    digits = load_digits()
    images = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    labels = torch.tensor(digits.target, dtype=torch.long)
    loader = DataLoader(
        TensorDataset(images, labels),
        batch_size=config.batch_size,
        shuffle=True,
        drop_last=True,  # one shape for every step: torch.compile does not recompile
        num_workers=config.workers,
        persistent_workers=config.workers > 0,
    )
    device = torch.device(config.device)
    model = nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = grad_scaler(config)  # loss scaling for fp16, a pass-through otherwise
    batches = _batches(loader)

    def step() -> tuple[int, torch.Tensor]:
        x, y = next(batches)
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)  # greenml autocasts model's forward
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return len(x), loss.detach()

    return TrainStep(step, model)
