"""Count the FLOPs of a torch MLP trained on scikit-learn's digits (offline, CPU).

Run it under greenml: the record gets the counted FLOPs, FLOP/s, FLOPs per
joule and joules per sample (and MFU on a GPU), beside market-based carbon,
water and embodied carbon:

    greenml run --country FR --certificates 50%@2025:GO -- python examples/flops_digits.py
    greenml runs show <id>
"""

from __future__ import annotations

import torch
from sklearn.datasets import load_digits

from greenml.measure.flops import FlopSampler

EPOCHS, BATCH = 20, 64


def main() -> None:
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    y = torch.tensor(digits.target)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sampler = FlopSampler(every=50, precision="fp32")  # the counter runs on 1 step in 50

    def step(xb: torch.Tensor, yb: torch.Tensor) -> float:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return float(loss)

    for epoch in range(EPOCHS):
        order = torch.randperm(len(x))
        for i in range(0, len(x), BATCH):
            idx = order[i : i + BATCH]
            loss = sampler.maybe_count(step, x[idx], y[idx], samples=len(idx))
        print(f"epoch {epoch + 1}: loss {loss:.3f}")
    totals = sampler.totals()
    print(f"{totals['flops']:.3g} FLOPs in {totals['steps']} steps "
          f"({totals['sampled_steps']} counted)")  # fmt: skip
    sampler.publish()  # into the run record under `greenml run`; nothing otherwise


if __name__ == "__main__":
    main()
