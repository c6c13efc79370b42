"""Blocking time of one checkpoint: plain torch.save (peer) vs greenml sync vs greenml async.

The peer is a plain ``torch.save`` of the same state (no fsync, no manifest,
not atomic). greenml's synchronous save adds a temporary file, fsync, rename
and SHA-256; the asynchronous mode blocks the loop only for the in-memory
snapshot (CheckFreq). Prints the median blocking seconds and the ratios.

    python benchmarks/resilience_checkpoint.py [params_millions] [reps]
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time

import torch

from greenml.resilience.checkpointer import Checkpointer
from greenml.resilience.state import TrainingState

millions = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
torch.manual_seed(0)
width = int((millions * 1e6 / 4) ** 0.5)
model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)])
opt = torch.optim.Adam(model.parameters())
model(torch.randn(2, width)).sum().backward()
opt.step()  # materialize Adam state
state = TrainingState(model=model, optimizer=opt)
n_params = sum(p.numel() for p in model.parameters())
root = tempfile.mkdtemp(prefix="greenml-ckpt-bench-")


def peer(i: int) -> float:
    t = time.perf_counter()
    torch.save(state.collect(step=i), os.path.join(root, f"peer-{i}.pt"))
    return time.perf_counter() - t


sync_ckpt = Checkpointer(os.path.join(root, "sync"), keep=2)
async_ckpt = Checkpointer(os.path.join(root, "async"), keep=2, async_mode=True)


def greenml(ckpt: Checkpointer, i: int) -> float:
    t = time.perf_counter()
    ckpt.save(state.collect(step=i), step=i)
    return time.perf_counter() - t


results: dict[str, list[float]] = {"peer torch.save": [], "greenml sync": [], "greenml async": []}
for i in range(reps):
    results["peer torch.save"].append(peer(i))
    results["greenml sync"].append(greenml(sync_ckpt, i))
    async_ckpt.wait()  # measure the snapshot alone, not waiting for the previous write
    results["greenml async"].append(greenml(async_ckpt, i))
async_ckpt.close()
size_mb = os.path.getsize(os.path.join(root, "peer-0.pt")) / 1e6
print(f"model {n_params / 1e6:.1f} M params, checkpoint {size_mb:.0f} MB, {reps} reps, median s:")
base = statistics.median(results["peer torch.save"])
for name, values in results.items():
    med = statistics.median(values)
    print(f"  {name:16s} {med:7.3f} s   ratio to peer {med / base:5.2f}")
shutil.rmtree(root)
