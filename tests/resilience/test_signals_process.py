"""Real processes, real signals: SIGTERM/SIGUSR1 at random steps, kill -9 mid-save, a full disk."""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from greenml.resilience.checkpointer import Checkpointer  # noqa: E402
from greenml.resilience.signals import EXIT_REQUEUE  # noqa: E402
from tests.resilience import child as program  # noqa: E402

DEADLINE_S = 90.0


class Child:
    """One run forked from the preloaded forkserver; its events arrive on a pipe."""

    def __init__(self, tmp_path: Path, mode: str, *args: Any) -> None:
        self.stderr_path = tmp_path / f"stderr-{time.monotonic_ns()}.txt"
        self.proc, self.events = program.start(mode, *args, stderr_path=str(self.stderr_path))
        self.seen: list[str] = []

    def wait_for(self, match: Callable[[str], bool]) -> str:
        end = time.monotonic() + DEADLINE_S
        while time.monotonic() < end:
            if not self.events.poll(max(0.0, end - time.monotonic())):
                break
            try:
                line = self.events.recv()
            except EOFError:
                pytest.fail(f"the run ended before the expected line; stderr:\n{self.stderr()}")
            self.seen.append(line)
            if match(line):
                return str(line)
        self.proc.kill()
        pytest.fail(f"no expected line within {DEADLINE_S} s; saw {self.seen[-5:]}")

    def send(self, sig: int) -> None:
        assert self.proc.pid is not None
        os.kill(self.proc.pid, sig)

    def finish(self) -> int:
        self.proc.join(timeout=DEADLINE_S)
        assert self.proc.exitcode is not None, "the run did not end"
        while self.events.poll(0):
            try:
                self.seen.append(self.events.recv())
            except EOFError:
                break
        self.events.close()
        return self.proc.exitcode

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""


def _steps(lines: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines if line.startswith("step ")]


def assert_identical(a: Any, b: Any, path: str = "state") -> None:
    """Bitwise equality of two payloads: tensors with torch.equal, the rest with ==."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype, path
        assert torch.equal(a, b), f"{path} differs"
    elif isinstance(a, dict):
        assert set(a) == set(b), f"{path}: keys {set(a) ^ set(b)}"
        for key in a:
            assert_identical(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_identical(x, y, f"{path}[{i}]")
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def test_random_sigterm_and_sigusr1_then_resume_is_bitwise_identical(tmp_path: Path) -> None:
    total = 60
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    interrupted = tmp_path / "interrupted"
    story = []
    resume = 0
    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGTERM):
        child = Child(tmp_path, "train", str(interrupted), total)
        started = int(child.wait_for(lambda line: line.startswith("resume")).split()[1])
        assert started == resume, f"seed {seed}: resumed at {started}, expected {resume}; {story}"
        target = rng.randint(started + 1, started + 10)
        child.wait_for(lambda line, t=target: line == f"step {t}")  # type: ignore[misc]
        child.send(sig)
        rc = child.finish()
        err = child.stderr()
        assert rc == EXIT_REQUEUE, f"seed {seed}: rc {rc}\n{err}"
        assert f"{sig.name}: emergency checkpoint of step" in err
        last_done = _steps(child.seen)[-1] + 1
        resume = last_done
        assert resume >= target + 1, f"seed {seed}: stopped at {resume} before the signal"
        story.append((sig.name, started, target, resume))
    final = Child(tmp_path, "train", str(interrupted), total)
    rc = final.finish()
    assert rc == 0, final.stderr()
    steps = _steps(final.seen)
    assert steps == list(range(resume, total)), f"seed {seed}: {story}"

    program.train(str(tmp_path / "reference"), total)
    got = Checkpointer(interrupted).load_latest()
    want = Checkpointer(tmp_path / "reference").load_latest()
    assert got is not None and want is not None
    assert got.info.step == want.info.step == total
    assert got.info.reason == "final"
    assert_identical(got.state, want.state)


def test_kill_9_during_a_save_leaves_the_previous_checkpoint_newest_valid(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = tmp_path / "ckpt"
    child = Child(tmp_path, "killsave", str(ckpt))
    child.wait_for(lambda line: line == "writing")
    time.sleep(random.uniform(0.0, 0.3))  # somewhere inside a ~2 s write
    child.send(signal.SIGKILL)
    assert child.finish() == -signal.SIGKILL
    assert "saved 2" not in child.seen
    partial = ckpt / "step-0000000002"
    assert not (partial / "manifest.json").exists()
    assert not (partial / "state.pt").exists()  # only the temporary file was being written
    assert any(p.name.endswith(".tmp") for p in partial.iterdir())

    loaded = Checkpointer(ckpt).load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert torch.equal(loaded.state["w"], torch.arange(10.0))
    assert "step-0000000002: no manifest (an interrupted save)" in caplog.text


def test_full_disk_stops_training_with_a_clear_error_and_keeps_the_last_checkpoint(
    tmp_path: Path,
) -> None:
    ckpt = tmp_path / "ckpt"
    child = Child(tmp_path, "fulldisk", str(ckpt))
    rc = child.finish()
    err = child.stderr()
    assert rc not in (0, EXIT_REQUEUE)
    assert "CheckpointError: cannot write checkpoint" in err
    assert "file too large" in err and "previous checkpoints are intact" in err
    # Checkpoints every 2 steps: 2 succeeded, 4 failed, and step 4 never ran.
    assert _steps(child.seen) == [0, 1, 2, 3]
    loaded = Checkpointer(ckpt).load_latest()
    assert loaded is not None and loaded.info.step == 2
    assert not (ckpt / "step-0000000004" / "manifest.json").exists()
    assert list((ckpt / "step-0000000004").iterdir()) == []  # the temporary file is gone
