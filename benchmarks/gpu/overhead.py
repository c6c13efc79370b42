"""Overhead in a real training loop: a Meter window per step, and the 10 Hz sampler.

A small transformer (bf16 autocast, AdamW) trains on random tokens. Blocks of
about one second run each variant in turn, the order rotated every round
(interleaved A/B, so drifts in clocks and temperature hit all variants alike):

- plain: no greenml;
- window/step (sync): ``meter.begin_window``/``end_window`` around each step,
  with ``sync_execution=True`` (the default: exact per-step energy, one CUDA sync);
- window/step (no sync): the same with ``sync_execution=False``;
- sampler 10 Hz: a Meter whose background thread reads NVML ten times a second.

The overhead of a variant is its throughput loss against plain (median of the
rounds); the plain blocks' spread says how much of it is noise. The direct cost
of one begin/end pair is also timed alone and put against the step time.

    python benchmarks/gpu/overhead.py --out DIR [--cpu-smoke]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from _common import Part, median, pct

VARIANTS = ("plain", "window/step (sync)", "window/step (no sync)", "sampler 10 Hz")


def build(device: str) -> Callable[[], Any]:
    """One training step of a 6-layer transformer encoder on random tokens."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    vocab, d, layers, seq, batch = (
        (8192, 512, 6, 256, 32) if device == "cuda" else (256, 32, 1, 16, 4)
    )
    layer = nn.TransformerEncoderLayer(d, 8 if d >= 64 else 4, 4 * d, batch_first=True)
    model = nn.Sequential(
        nn.Embedding(vocab, d), nn.TransformerEncoder(layer, layers), nn.Linear(d, vocab)
    ).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, vocab, (batch, seq + 1), device=device)
    dtype = torch.bfloat16

    def step() -> Any:
        x, y = tokens[:, :-1], tokens[:, 1:]
        with torch.autocast(device_type=device, dtype=dtype):
            logits = model(x)
        loss = nn.functional.cross_entropy(logits.float().reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def main() -> None:
    part = Part("overhead", __doc__.splitlines()[0], budget_s=40)
    part.parse()
    part.require_gpu()
    import torch

    from greenml.measure.meter import Meter
    from greenml.measure.sensors.nvml import NvmlSensor

    if part.smoke:
        torch.set_num_threads(1)
    nvml = part.nvml()
    part.figures["environment"] = part.environment()
    step = build(part.device)

    def sync() -> None:
        if part.device == "cuda":
            torch.cuda.synchronize()

    def meter(hz: float) -> Meter:
        return Meter(sensors=[NvmlSensor([0], nvml=nvml)], sample_hz=hz)

    # Warm-up: kernels chosen, allocator settled.
    end = time.monotonic() + (3.0 if not part.smoke else 0.3)
    while time.monotonic() < end:
        step()
    sync()

    quiet = meter(0.0)
    pairs = 2000 if not part.smoke else 200
    t = time.perf_counter()
    for _ in range(pairs):
        quiet.begin_window("w", sync_execution=False)
        quiet.end_window("w", sync_execution=False)
    pair_us = (time.perf_counter() - t) / pairs * 1e6

    def block(variant: str, seconds: float) -> float:
        """Steps per second of ``variant`` over about ``seconds``."""
        sampler = meter(10.0) if variant == "sampler 10 Hz" else None
        windowed = variant.startswith("window")
        synced = variant == "window/step (sync)"
        sync()
        steps = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            if windowed:
                quiet.begin_window("step", sync_execution=synced)
            step()
            if windowed:
                quiet.end_window("step", sync_execution=synced)
            steps += 1
        sync()
        rate = steps / (time.perf_counter() - start)
        if sampler is not None:
            sampler.close()
        return rate

    block_s = 1.2 if not part.smoke else 0.15
    rounds_max = 6 if not part.smoke else 2
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(rounds_max):
        if r >= 2 and part.left_s() < len(VARIANTS) * (block_s + 0.5) + 2:
            break
        order = VARIANTS[r % len(VARIANTS) :] + VARIANTS[: r % len(VARIANTS)]
        for variant in order:
            rates[variant].append(block(variant, block_s))
    quiet.close()
    plain = median(rates["plain"])
    step_ms = 1e3 / plain
    noise = (max(rates["plain"]) - min(rates["plain"])) / plain
    rows, figures = [], {}
    for variant in VARIANTS:
        rate = median(rates[variant])
        loss = 1 - rate / plain
        figures[variant] = {"steps_per_s": rates[variant], "median": rate, "overhead_rel": loss}
        rows.append([variant, len(rates[variant]), rate, 1e3 / rate, pct(loss)])
    part.figures.update(
        variants=figures,
        step_ms=step_ms,
        plain_spread_rel=noise,
        window_pair_us=pair_us,
        window_pair_share_of_step=pair_us / 1e3 / step_ms,
    )
    part.table(
        "Overhead in a training loop (interleaved blocks, medians)",
        ["variant", "blocks", "steps/s", "ms/step", "throughput loss"],
        rows,
    )
    part.table(
        "Direct cost of one window",
        ["begin+end µs", "step ms", "share of step", "plain blocks' spread"],
        [[pair_us, step_ms, pct(pair_us / 1e3 / step_ms), pct(noise)]],
    )
    part.finish()


if __name__ == "__main__":
    main()
