"""Savings without touching device settings: ``greenml optimize sweep`` on a transformer step.

Runs the real CLI twice on ``benchmarks/gpu/sweep_step.py:make_step`` (a small
transformer language model):

1. fp32, TF32 and BF16 autocast × batch sizes 32 and 256, no ``torch.compile``;
2. BF16 at batch 256 with ``torch.compile`` (compiling is slow: one configuration).

It then compares the energy per sample of greenml's recommendation for least
energy (η = 0, the lowest of the two sweeps) with naive fp32 (the smallest batch,
no compile) and with fp32 at the recommendation's batch size. Target: ≥ 30 %
less than naive fp32. No device setting is changed (no power limit, no clocks).

    python benchmarks/gpu/sweep.py --out DIR [--cpu-smoke]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REPO, Part, pct

STEP = "benchmarks/gpu/sweep_step.py:make_step"


def run_sweep(part: Part, args: list[str], timeout_s: float) -> dict[str, Any] | None:
    """``greenml optimize sweep STEP ARGS --json-out FILE``; its JSON, None if it failed."""
    out = Path(tempfile.mkdtemp(prefix="greenml-sweep-")) / "sweep.json"
    cmd = [
        sys.executable,
        "-m",
        "greenml",
        "optimize",
        "sweep",
        STEP,
        *args,
        "--eta",
        "0",
        "--json-out",
        str(out),
    ]
    print("$", " ".join(cmd[1:]), flush=True)
    try:
        proc = subprocess.run(
            cmd, cwd=REPO, timeout=timeout_s, capture_output=True, text=True, env=dict(os.environ)
        )
    except subprocess.TimeoutExpired:
        print(f"sweep timed out after {timeout_s:.0f} s")
        return None
    print(proc.stderr[-3000:])
    if proc.returncode != 0 or not out.exists():
        print(f"sweep failed: exit {proc.returncode}")
        return None
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def label(config: dict[str, Any]) -> str:
    compiled = "on" if config["compile"] else "off"
    return f"{config['precision']} b{config['batch_size']} compile {compiled}"


def main() -> None:
    part = Part("sweep", __doc__.splitlines()[0], budget_s=85)
    part.parse()
    part.require_gpu()
    part.figures["environment"] = part.environment()
    if part.smoke:
        common = ["--device", "cpu", "--warmup", "1", "--steps", "3", "--seconds", "0"]
        plans = [["--precision", "fp32,bf16", "--batch-size", "8", "--compile", "off", *common]]
    else:
        common = ["--device", "cuda", "--warmup", "3", "--steps", "10", "--seconds", "1.5"]
        plans = [
            [
                "--precision",
                "fp32,tf32,bf16",
                "--batch-size",
                "32,256",
                "--compile",
                "off",
                *common,
            ],
            ["--precision", "bf16", "--batch-size", "256", "--compile", "on", *common],
        ]
    results: list[dict[str, Any]] = []
    recommended: list[dict[str, Any]] = []
    for i, args in enumerate(plans):
        left = part.left_s() - 2
        if left < 20 and i > 0:
            print(f"sweep {i + 1} skipped: {left:.0f} s left of the budget")
            part.figures[f"sweep{i + 1}"] = "skipped: budget"
            continue
        data = run_sweep(part, args, left)
        if data is None:
            part.figures[f"sweep{i + 1}"] = "failed"
            continue
        part.figures[f"sweep{i + 1}"] = {"args": args, "result": data}
        part.checkpoint()
        results += [c for c in data["configs"] if c["status"] == "ok"]
        recommended += [r for r in data["recommendations"] if r["eta"] == 0]
    if not results:
        part.finish("failed", reason="no sweep configuration ran")
        return

    def per_sample(c: dict[str, Any]) -> float:
        return float(c["energy_per_sample_j"])

    def gpu_per_sample(c: dict[str, Any]) -> float | None:
        gpu = (c.get("components_j") or {}).get("gpu")
        return gpu / c["samples"] if gpu is not None and c.get("samples") else None

    part.table(
        "greenml optimize sweep: every configuration",
        ["configuration", "J/sample (all)", "J/sample (GPU)", "samples/s", "W", "method", "±"],
        [
            [
                label(c["config"]),
                per_sample(c),
                gpu_per_sample(c),
                c["samples_per_s"],
                c["power_w"],
                c["method"],
                f"{c['uncertainty_rel'] * 100:.1f} %",
            ]
            for c in results
        ],
    )
    fp32 = [c for c in results if c["config"]["precision"] == "fp32" and not c["config"]["compile"]]
    naive = min(fp32, key=lambda c: c["config"]["batch_size"]) if fp32 else None
    best = min(recommended, key=lambda r: r["energy_per_sample_j"]) if recommended else None
    if best is None or naive is None:
        part.finish("failed", reason="no recommendation or no fp32 configuration")
        return
    same_batch = [c for c in fp32 if c["config"]["batch_size"] == best["config"]["batch_size"]]
    saving = 1 - best["energy_per_sample_j"] / per_sample(naive)
    saving_same = (
        1 - best["energy_per_sample_j"] / per_sample(same_batch[0]) if same_batch else None
    )
    part.figures.update(
        naive=naive,
        recommended=best,
        saving_vs_naive_fp32_rel=saving,
        saving_vs_fp32_same_batch_rel=saving_same,
        target_met=saving >= 0.30,
    )
    part.table(
        "Recommended (η = 0) against naive fp32",
        [
            "recommended",
            "J/sample",
            "naive fp32",
            "J/sample",
            "saving",
            "saving vs fp32 same batch",
        ],
        [
            [
                best["label"],
                best["energy_per_sample_j"],
                label(naive["config"]),
                per_sample(naive),
                pct(saving),
                pct(saving_same),
            ]
        ],
    )
    part.finish()


if __name__ == "__main__":
    main()
