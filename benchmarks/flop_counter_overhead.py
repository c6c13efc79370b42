"""Cost of counting FLOPs: a training loop with and without a FlopSampler, side by side.

Trains a small transformer-style MLP stack for ``--steps`` steps three ways:
plainly, with ``FlopSampler(every=N)`` (the counter on the first step and every
N-th), and with the counter on every step (what a tool that counts each step
pays). Prints the wall time of each, the run's overhead in seconds and percent,
and the cost of one counted step. Target: ≤ 1 % added to the run at every=100.
The exit code is 0 even when the target fails: this is a report.

The machine this runs on (CPU here) sets the numbers; on a GPU the counted
step also synchronizes nothing, so the overhead is the counter's Python
dispatch per op, the same order as here.

Usage::

    python benchmarks/flop_counter_overhead.py [--steps N] [--every N] [--repeats N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from greenml.measure.flops import FlopSampler

TARGET_REL = 0.01


def make_step(width: int, depth: int, batch: int) -> Callable[[], None]:
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, 4 * width), torch.nn.GELU(),
                   torch.nn.Linear(4 * width, width), torch.nn.LayerNorm(width)]  # fmt: skip
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        model(x).pow(2).mean().backward()
        opt.step()

    return step


def timed(loop: Callable[[], None]) -> float:
    start = time.perf_counter()
    loop()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    step = make_step(args.width, args.depth, args.batch)
    for _ in range(5):
        step()  # warm-up: allocator, kernels

    def plain() -> None:
        for _ in range(args.steps):
            step()

    def sampled() -> None:
        sampler = FlopSampler(every=args.every, precision="fp32")
        for _ in range(args.steps):
            sampler.maybe_count(step)

    def every_step() -> None:
        sampler = FlopSampler(every=1, precision="fp32")
        for _ in range(args.steps):
            sampler.maybe_count(step)

    results: dict[str, list[float]] = {"plain": [], "sampled": [], "every step": []}
    for _ in range(args.repeats):  # interleaved, so drift hits all three alike
        for name, loop in (("plain", plain), ("sampled", sampled), ("every step", every_step)):
            results[name].append(timed(loop))
    median = {name: statistics.median(times) for name, times in results.items()}
    counted_steps = len(range(0, args.steps, args.every))
    per_counted = (median["every step"] - median["plain"]) / args.steps
    overhead = median["sampled"] - median["plain"]
    sampler = FlopSampler(every=args.every, precision="fp32")
    sampler.maybe_count(step)
    flops = sampler.totals()["flops"]
    print(f"{args.steps} steps, {args.depth}×MLP({args.width}) batch {args.batch}, "
          f"{flops:.3g} FLOPs per step (counted)")  # fmt: skip
    for name, value in median.items():
        print(f"  {name:<11} {value:8.3f} s  (median of {args.repeats})")
    rel = overhead / median["plain"]
    print(f"  counter on {counted_steps} of {args.steps} steps (every={args.every}): "
          f"+{overhead:.3f} s = {rel:+.2%} of the run; one counted step costs "
          f"+{per_counted * 1000:.2f} ms over a plain one")  # fmt: skip
    print(f"  counting every step: {median['every step'] / median['plain']:.2f}× the plain run")
    verdict = "met" if rel <= TARGET_REL else "NOT met"
    print(f"  target ≤ {TARGET_REL:.0%} at every={args.every}: {verdict}")


if __name__ == "__main__":
    main()
