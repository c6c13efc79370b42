"""What the optimizers need from ``torch.distributed``, without importing torch.

Without an initialized process group every function here is the single-process
answer, so callers need no branch of their own.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from greenml.errors import ConfigError


def process_group() -> Any | None:
    """``torch.distributed`` when a process group is up (torch is never imported here)."""
    dist = sys.modules.get("torch.distributed")  # never imported: no group can be up
    if dist is None:
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def local_rank() -> int:
    """This rank's GPU on its machine (``LOCAL_RANK``); ConfigError when it is not set."""
    raw = os.environ.get("LOCAL_RANK")
    if raw is None or not raw.isdigit():
        raise ConfigError(
            "under torch.distributed each rank tunes its own GPU: pass gpus=[...] "
            "(LOCAL_RANK is not set)"
        )
    return int(raw)


def all_reduce(values: list[float], ops: list[str]) -> list[float]:
    """Each value reduced across ranks with its op (sum, max, min); as is without DDP."""
    dist = process_group()
    if dist is None:
        return values
    import torch

    device = "cpu"
    if dist.get_backend() == "nccl":
        device = f"cuda:{torch.cuda.current_device()}"
    out = []
    for value, op in zip(values, ops, strict=True):
        tensor = torch.tensor([value], dtype=torch.float64, device=device)
        dist.all_reduce(tensor, op={"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX,
                                    "min": dist.ReduceOp.MIN}[op])  # fmt: skip
        out.append(float(tensor.item()))
    return out
