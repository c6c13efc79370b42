"""The training step that benchmarks/gpu/sweep.py hands to ``greenml optimize sweep``.

A 4-layer transformer encoder language model on random tokens (made on the
device, so no data loader). greenml applies the precision (autocast of the
model's forward, TF32 on CUDA) and ``torch.compile`` to the model it returns.
On the CPU (``--cpu-smoke``) the model is tiny.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from greenml.optimize.sweep.run import SweepConfig, TrainStep, grad_scaler


def make_step(config: SweepConfig) -> TrainStep:
    """One AdamW step over ``config.batch_size`` sequences."""
    cuda = config.device == "cuda"
    vocab, d, layers, seq = (8192, 512, 4, 128) if cuda else (128, 32, 1, 16)
    device = torch.device(config.device)
    layer = nn.TransformerEncoderLayer(d, 8 if cuda else 4, 4 * d, batch_first=True)
    model = nn.Sequential(
        nn.Embedding(vocab, d), nn.TransformerEncoder(layer, layers), nn.Linear(d, vocab)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = grad_scaler(config)
    generator = torch.Generator(device=device).manual_seed(0)

    def step() -> tuple[int, Any]:
        tokens = torch.randint(
            0, vocab, (config.batch_size, seq + 1), device=device, generator=generator
        )
        logits = model(tokens[:, :-1])  # greenml autocasts the model's forward
        loss = nn.functional.cross_entropy(
            logits.float().reshape(-1, vocab), tokens[:, 1:].reshape(-1)
        )
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return config.batch_size, loss.detach()

    return TrainStep(step, model)
