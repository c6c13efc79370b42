"""A small CPU training program, run as real processes by test_signals_process.py.

The tests start each run with :func:`start`: a multiprocessing *forkserver*
that has imported torch (and torch._dynamo, which every torch optimizer pulls
in) once forks a fresh process per run, so a run costs milliseconds instead of
seconds of imports. Each run is an ordinary process with its own pid, signal
handlers, exit status and file-size limit; it reports events (``resume N``,
``step N``, ``writing``…) on a pipe and writes its stderr to a file.

Modes:
    train DIR TOTAL     train with resilient_steps (resumes, exits 75 on SIGTERM/SIGUSR1)
    killsave DIR        save step 1, then a slowed save of step 2 (for kill -9)
    fulldisk DIR        train; after the first checkpoint cap file sizes (RLIMIT_FSIZE)

``python tests/resilience/child.py MODE DIR [TOTAL]`` runs one by hand.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import IO, Any

import numpy as np
import torch
import torch._dynamo  # imported by the first optimizer: preloaded here once

from greenml.resilience.checkpointer import Checkpointer
from greenml.resilience.loop import resilient_steps
from greenml.resilience.policy import FixedInterval
from greenml.resilience.session import Interrupts
from greenml.resilience.storage import LocalStorage, Writer

STEP_SLEEP_S = 0.004
DIM = 8
Emit = Callable[[str], None]


def build(seed: int = 1234) -> dict[str, Any]:
    """Model (with dropout), Adam, a step LR schedule, a CPU GradScaler, a data generator."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(DIM, 16), torch.nn.ReLU(), torch.nn.Dropout(0.25), torch.nn.Linear(16, 1)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=7, gamma=0.8)
    return {
        "model": model,
        "optimizer": optimizer,
        "scheduler": scheduler,
        "scaler": torch.amp.GradScaler("cpu"),
        "generator": torch.Generator().manual_seed(seed + 1),
        "data_state": {"samples_seen": 0},
    }


def train_step(objs: dict[str, Any]) -> None:
    """One step that draws from every RNG the checkpoint must restore."""
    x = torch.randn(32, DIM, generator=objs["generator"])
    noise = random.gauss(0.0, 0.1) + float(np.random.normal(0.0, 0.1))
    y = x.sum(dim=1, keepdim=True) * 0.5 + noise
    loss = ((objs["model"](x) - y) ** 2).mean()
    objs["optimizer"].zero_grad()
    objs["scaler"].scale(loss).backward()
    objs["scaler"].step(objs["optimizer"])
    objs["scaler"].update()
    objs["scheduler"].step()
    objs["data_state"]["samples_seen"] += 32


def train(directory: str, total: int, emit: Emit | None = None, interval_s: float = 0.05) -> None:
    """Train to ``total`` steps under resilient_steps, checkpointing every ``interval_s``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        objs = build()
        steps = resilient_steps(
            total,
            Checkpointer(directory, keep=2),
            **objs,
            steps_per_epoch=10,
            policy=FixedInterval(interval_s),
        )
        first = True
        for step in steps:
            if emit is not None and first:
                emit(f"resume {step}")
            first = False
            train_step(objs)
            if emit is not None:
                emit(f"step {step}")
                time.sleep(STEP_SLEEP_S)
    finally:
        torch.set_num_threads(threads)


def killsave(directory: str, emit: Emit) -> None:
    """Save step 1, then step 2 through a storage that writes slowly."""

    class SlowFile:
        def __init__(self, f: IO[bytes]) -> None:
            self.f = f
            self.chunks = 0

        def write(self, data: bytes) -> int:
            view = memoryview(data)
            for start in range(0, len(view), 4096):
                self.f.write(view[start : start + 4096])
                self.f.flush()
                self.chunks += 1
                if self.chunks == 1:
                    emit("writing")
                time.sleep(0.01)
            return len(data)

        def flush(self) -> None:
            self.f.flush()

    class SlowStorage(LocalStorage):
        def write_atomic(self, name: str, write: Writer) -> None:
            super().write_atomic(name, lambda f: write(SlowFile(f)))  # type: ignore[arg-type]

    Checkpointer(directory).save({"w": torch.arange(10.0)}, step=1)
    emit("saved 1")
    big = {"w": torch.arange(200_000.0)}  # 800 kB: ~200 slow chunks, ~2 s
    Checkpointer(storage=SlowStorage(directory)).save(big, step=2)
    emit("saved 2")


def fulldisk(directory: str, emit: Emit) -> None:
    """Train; once step 2 is checkpointed, cap file sizes below one checkpoint."""
    import resource

    objs = build()
    ticks = [0.0]
    steps = resilient_steps(
        20,
        Checkpointer(directory),
        **objs,
        policy=FixedInterval(2.0),
        interrupts=Interrupts(clock=lambda: ticks[0]),
    )
    for step in steps:
        train_step(objs)
        ticks[0] += 1.0
        emit(f"step {step}")
        if Path(directory, "step-0000000002", "manifest.json").exists():
            resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def _entry(mode: str, args: tuple[Any, ...], events: Connection, stderr_path: str) -> None:
    """Process entry: stderr to a file, events to the pipe, then the mode."""
    fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)

    def emit(line: str) -> None:
        events.send(line)

    if mode == "train":
        train(args[0], args[1], emit)
    elif mode == "killsave":
        killsave(args[0], emit)
    elif mode == "fulldisk":
        fulldisk(args[0], emit)


def start(mode: str, *args: Any, stderr_path: str) -> tuple[BaseProcess, Connection]:
    """Fork a run from the preloaded forkserver; returns the process and its event pipe."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    reader, writer = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_entry, args=(mode, args, writer, stderr_path))
    proc.start()
    writer.close()
    return proc, reader


if __name__ == "__main__":
    mode, target = sys.argv[1], sys.argv[2]
    if mode == "train":
        train(target, int(sys.argv[3]), print)
    elif mode == "killsave":
        killsave(target, print)
    elif mode == "fulldisk":
        fulldisk(target, print)
    else:
        raise SystemExit(f"unknown mode {mode}")
