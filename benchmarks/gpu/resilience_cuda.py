"""Resilience on CUDA: SIGTERM mid-training → exit 75, then a bitwise-identical resume.

Three runs of the same training program (this file with ``--child DIR``), each a
fresh process: a reference run to the end; a run sent SIGTERM after a few steps,
which must take an emergency checkpoint and exit 75; and a resumed run that
finishes it. The final checkpoints of the reference and of the interrupted-then-
resumed run are compared tensor by tensor (model, optimizer, data position and
every RNG state, the CUDA generators included). The model uses dropout and its
data come from the CUDA generator, so a resume that lost the CUDA RNG differs.

    python benchmarks/gpu/resilience_cuda.py --out DIR [--cpu-smoke]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOTAL = 60
SIGNAL_AT = 23
EXIT_REQUEUE = 75


def child(directory: str, device: str, total: int) -> None:
    """Train ``total`` steps under resilient_steps, printing ``step N`` after each."""
    import random

    import numpy as np
    import torch

    from greenml.resilience.checkpointer import Checkpointer
    from greenml.resilience.loop import resilient_steps
    from greenml.resilience.policy import FixedInterval

    torch.use_deterministic_algorithms(True)
    random.seed(1234)
    np.random.seed(1234)
    torch.manual_seed(1234)
    dim = 256 if device == "cuda" else 16
    model = torch.nn.Sequential(
        torch.nn.Linear(dim, 4 * dim),
        torch.nn.GELU(),
        torch.nn.Dropout(0.2),
        torch.nn.Linear(4 * dim, 1),
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.9)
    data_state = {"samples_seen": 0}
    steps = resilient_steps(
        total,
        Checkpointer(directory, keep=2),
        model=model,
        optimizer=optimizer,
        scheduler=scheduler,
        data_state=data_state,
        policy=FixedInterval(0.2),
    )
    for step in steps:
        x = torch.randn(64, dim, device=device)  # the CUDA default generator
        y = x.mean(dim=1, keepdim=True) + 0.1 * torch.randn(64, 1, device=device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        data_state["samples_seen"] += 64
        if device == "cuda":
            torch.cuda.synchronize()
        print(f"step {step}", flush=True)
        time.sleep(0.05)  # leaves the parent time to read "step N" and signal


def start(directory: Path, device: str, total: int) -> subprocess.Popen[str]:
    env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8")
    return subprocess.Popen(
        [
            sys.executable,
            __file__,
            "--child",
            str(directory),
            "--device",
            device,
            "--total",
            str(total),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return proc.returncode, out, err


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two loaded checkpoints differ, bit for bit (tensors with torch.equal)."""
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        same = a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.cpu(), b.cpu())
        return [] if same else [path or "/"]
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(map(str, set(a) ^ set(b)))}"]
        return [d for k in a for d in differences(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r:.40} != {b!r:.40}"]


def main() -> None:
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        total = int(sys.argv[sys.argv.index("--total") + 1])
        child(sys.argv[i + 1], sys.argv[sys.argv.index("--device") + 1], total)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import Part

    part = Part("resilience_cuda", __doc__.splitlines()[0], budget_s=35)
    part.parse()
    part.require_gpu()
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="greenml-resilience-"))
    device = part.device
    total, signal_at = (TOTAL, SIGNAL_AT) if not part.smoke else (24, 9)

    ref = start(root / "reference", device, total)
    interrupted = start(root / "interrupted", device, total)  # the two start up side by side
    assert interrupted.stdout is not None
    sent_at = None
    for line in interrupted.stdout:
        if line.strip() == f"step {signal_at}":
            interrupted.send_signal(signal.SIGTERM)
            sent_at = signal_at
            break
    reserve = 0.4 * part.left_s()  # for the resumed run, a fresh process
    rc_int, out_int, err_int = finish(interrupted, max(3.0, part.left_s() - reserve))
    stopped_after = [int(s.split()[1]) for s in out_int.split("\n") if s.startswith("step ")]
    rc_ref, _, err_ref = finish(ref, max(3.0, part.left_s() - reserve))
    resumed = start(root / "interrupted", device, total)
    rc_res, out_res, err_res = finish(resumed, max(3.0, part.left_s() - 1))
    resumed_steps = [int(s.split()[1]) for s in out_res.split("\n") if s.startswith("step ")]

    from greenml.resilience.checkpointer import Checkpointer  # torch: after the children start

    got = Checkpointer(root / "interrupted").load_latest()
    want = Checkpointer(root / "reference").load_latest()
    diffs = (
        ["a checkpoint is missing"]
        if got is None or want is None
        else differences(got.state, want.state)
    )
    cuda_rng = bool(want and "torch_cuda" in want.state.get("rng", {}))
    ok = rc_int == EXIT_REQUEUE and rc_ref == 0 and rc_res == 0 and not diffs
    part.figures.update(
        device=device,
        sigterm_after_step=sent_at,
        interrupted_exit=rc_int,
        last_step_before_exit=stopped_after[-1] if stopped_after else sent_at,
        emergency_logged="emergency checkpoint" in err_int,
        reference_exit=rc_ref,
        resumed_exit=rc_res,
        resumed_from=resumed_steps[0] if resumed_steps else None,
        final_step_reference=want.info.step if want else None,
        final_step_resumed=got.info.step if got else None,
        cuda_rng_in_checkpoint=cuda_rng,
        differences=diffs[:20],
        bitwise_identical=not diffs,
        passed=ok,
    )
    if not ok:
        for name, err in (("interrupted", err_int), ("reference", err_ref), ("resumed", err_res)):
            print(
                f"--- stderr of the {name} run (last lines):\n" + "\n".join(err.splitlines()[-8:])
            )
    part.table(
        "Resilience on " + ("CUDA" if device == "cuda" else "CPU (smoke)"),
        [
            "SIGTERM after step",
            "exit",
            "resumed at step",
            "final step",
            "CUDA RNG saved",
            "bitwise identical to uninterrupted",
        ],
        [
            [
                sent_at,
                rc_int,
                part.figures["resumed_from"],
                part.figures["final_step_resumed"],
                cuda_rng,
                "yes" if not diffs else f"no ({len(diffs)} differences)",
            ]
        ],
    )
    part.finish("ok" if ok else "failed")


if __name__ == "__main__":
    main()
