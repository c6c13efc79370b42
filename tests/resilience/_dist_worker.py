"""One rank of a small 2-process DDP training on gloo, run by test_distributed.py.

Each rank is a real process forked from a preloaded multiprocessing
*forkserver* (torch imported once), joins a gloo process group through a file
store, wraps a dropout net in ``DistributedDataParallel`` and trains it under
:func:`~greenml.resilience.loop.resilient_steps`. Its data and dropout draw
from per-rank seeds, so an exact resume needs every rank's own RNG and data
position back. It reports ``step N`` and ``saved N`` (a checkpoint at the
boundary after N steps) on a pipe, writes stderr to a file, and at a normal end
saves its final weights to ``OUT/weights-rank{R}.pt``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import torch
import torch._dynamo  # imported by the first optimizer: preloaded here once
import torch.distributed as dist

from greenml.errors import CheckpointError
from greenml.resilience.checkpointer import Checkpointer, SaveResult
from greenml.resilience.loop import resilient_steps
from greenml.resilience.policy import FixedInterval
from greenml.resilience.session import Interrupts

DIM = 6
WORLD = 2
Emit = Callable[[str], None]


@dataclass(frozen=True)
class Job:
    """What every rank of one run does.

    Attributes:
        dirs: The checkpoint directory of each rank (normally the same one).
        out: Where the ranks put their final weights and stderr.
        total: Steps of the whole run.
        sleep_s: Sleep after each step (gives a test time to send a signal).
        interval_s: The checkpoint interval of the fixed policy.
        ticks_s: Per rank, how far its fake clock moves per step (None: real clocks).
        sync_every: Agreement period, in steps.
        broken_writer: Rank 0's checkpoint writes fail (a full disk).
    """

    dirs: tuple[str, ...]
    out: str
    total: int
    sleep_s: float = 0.0
    interval_s: float = 3600.0
    ticks_s: tuple[float, ...] | None = None
    sync_every: int = 1
    broken_writer: bool = False
    store: str = field(default="")


class Recorded(FixedInterval):
    """A fixed interval that reports each checkpoint's boundary."""

    def __init__(self, every_s: float, done: list[int], emit: Emit) -> None:
        super().__init__(every_s)
        self.done = done
        self.emit = emit

    def record_checkpoint(self, cost_s: float) -> None:
        self.emit(f"saved {self.done[0]}")
        super().record_checkpoint(cost_s)


class FullDisk(Checkpointer):
    """A checkpointer whose writes fail like a full disk."""

    def save(self, state: Any, **kwargs: Any) -> SaveResult:
        raise CheckpointError("cannot write checkpoint: no space left on the device")


def rank_main(job: Job, rank: int, emit: Emit) -> None:
    """Train as one rank of ``job``; raises SystemExit(75) after an interruption."""
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"file://{job.store}",
        rank=rank,
        world_size=WORLD,
        timeout=timedelta(seconds=30),
    )
    _train(job, rank, emit)


def _train(job: Job, rank: int, emit: Emit) -> None:
    torch.manual_seed(1234)  # the same initial weights on every rank
    net = torch.nn.Sequential(
        torch.nn.Linear(DIM, 12), torch.nn.ReLU(), torch.nn.Dropout(0.25), torch.nn.Linear(12, 1)
    )
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-2)
    torch.manual_seed(100 + rank)  # per-rank dropout masks
    generator = torch.Generator().manual_seed(500 + rank)  # per-rank data
    data_state = {"samples_seen": 0}
    done = [0]
    ticks = [0.0]
    interrupts = Interrupts()
    if job.ticks_s is not None:
        interrupts = Interrupts(clock=lambda: ticks[0])
    kind = FullDisk if job.broken_writer and rank == 0 else Checkpointer
    steps = resilient_steps(
        job.total,
        kind(job.dirs[rank], keep=10),
        model=net,
        optimizer=optimizer,
        generator=generator,
        data_state=data_state,
        policy=Recorded(job.interval_s, done, emit),
        interrupts=interrupts,
        sync_every=job.sync_every,
    )
    for step in steps:
        x = torch.randn(16, DIM, generator=generator)
        y = x.sum(dim=1, keepdim=True) * 0.5
        loss = ((ddp(x) - y) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        data_state["samples_seen"] += 16
        done[0] = step + 1
        if job.ticks_s is not None:
            ticks[0] += job.ticks_s[rank]
        emit(f"step {step}")
        if job.sleep_s:
            time.sleep(job.sleep_s)
    torch.save(net.state_dict(), Path(job.out, f"weights-rank{rank}.pt"))
    emit("done")


def _entry(job: Job, rank: int, events: Connection, stderr_path: str) -> None:
    """Run one rank, then leave with ``os._exit`` (exit code kept, no destructors).

    torch 2.13's gloo process group joins its worker thread in its destructor
    while holding the GIL; freed right after a collective (the DDP reducer in a
    SystemExit's traceback) it can deadlock with that thread. A test harness
    has no use for those destructors.
    """
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    code = 0
    try:
        rank_main(job, rank, events.send)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stderr.flush()
    events.close()
    os._exit(code)


def start(job: Job, rank: int) -> tuple[BaseProcess, Connection, Path]:
    """Fork one rank from the preloaded forkserver: the process, its event pipe, its stderr."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    reader, writer = ctx.Pipe(duplex=False)
    stderr_path = Path(job.out, f"stderr-rank{rank}.txt")
    proc = ctx.Process(target=_entry, args=(job, rank, writer, str(stderr_path)))
    proc.start()
    writer.close()
    return proc, reader, stderr_path
