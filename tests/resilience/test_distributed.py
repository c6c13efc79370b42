"""Two real ranks on gloo: one checkpoint step, one writer, one exit code, an exact resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from greenml.errors import ConfigError  # noqa: E402
from greenml.resilience.checkpointer import Checkpointer  # noqa: E402
from greenml.resilience.distributed import RANKS_KEY, detect  # noqa: E402
from greenml.resilience.loop import resilient_steps  # noqa: E402
from greenml.resilience.signals import EXIT_REQUEUE  # noqa: E402
from tests.resilience import _dist_worker as worker  # noqa: E402

DEADLINE_S = 60.0
TOTAL = 40


@dataclass
class Rank:
    """One running rank and what it reported."""

    proc: Any
    events: Any
    stderr_path: Path
    seen: list[str]

    def poll(self) -> None:
        while self.events.poll(0):
            try:
                self.seen.append(self.events.recv())
            except EOFError:
                return

    def steps(self) -> list[int]:
        return [int(e.split()[1]) for e in self.seen if e.startswith("step ")]

    def saved(self) -> list[int]:
        return [int(e.split()[1]) for e in self.seen if e.startswith("saved ")]

    def stderr(self) -> str:
        return self.stderr_path.read_text() if self.stderr_path.exists() else ""


def launch(job: worker.Job) -> list[Rank]:
    Path(job.out).mkdir(parents=True, exist_ok=True)
    job = replace(job, store=str(Path(job.out, f"store-{time.monotonic_ns()}")))
    return [Rank(*worker.start(job, rank), seen=[]) for rank in range(worker.WORLD)]


def finish(ranks: list[Rank]) -> list[int]:
    """Wait for every rank (killing them all past the deadline); their exit codes."""
    end = time.monotonic() + DEADLINE_S
    for rank in ranks:
        while rank.proc.is_alive() and time.monotonic() < end:
            rank.poll()
            rank.proc.join(timeout=0.05)
    hung = [r for r in ranks if r.proc.is_alive()]
    for rank in hung:
        rank.proc.kill()
    for rank in ranks:
        rank.proc.join()
        rank.poll()
    assert not hung, "a rank hung:\n" + "\n".join(r.stderr()[-2000:] for r in ranks)
    return [rank.proc.exitcode for rank in ranks]


def run(job: worker.Job) -> tuple[list[int], list[Rank]]:
    ranks = launch(job)
    return finish(ranks), ranks


def _manifests(root: Path) -> dict[int, dict[str, Any]]:
    found = {}
    for folder in sorted(root.glob("step-*")):
        doc = json.loads((folder / "manifest.json").read_text())
        found[doc["step"]] = doc
    return found


def _weights(out: Path, rank: int) -> dict[str, Any]:
    loaded: dict[str, Any] = torch.load(out / f"weights-rank{rank}.pt", weights_only=True)
    return loaded


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int], list[Rank]]:
    """A 2-rank run that got SIGTERM on rank 1 only, once it had run a few steps."""
    root = tmp_path_factory.mktemp("interrupted")
    ckpt = str(root / "ckpt")
    job = worker.Job(dirs=(ckpt, ckpt), out=str(root / "out"), total=TOTAL, sleep_s=0.02)
    ranks = launch(job)
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end and not any(s >= 4 for s in ranks[1].steps()):
        ranks[1].poll()
        time.sleep(0.005)
    os.kill(ranks[1].proc.pid, signal.SIGTERM)
    return root, finish(ranks), ranks


def test_sigterm_on_one_rank_stops_both_at_the_same_step(
    interrupted: tuple[Path, list[int], list[Rank]],
) -> None:
    root, codes, ranks = interrupted
    errors = [r.stderr() for r in ranks]
    assert codes == [EXIT_REQUEUE, EXIT_REQUEUE], errors
    last = [r.steps()[-1] for r in ranks]
    assert last[0] == last[1], f"the ranks stopped after different steps: {last}"
    boundary = last[0] + 1
    assert 4 < boundary < TOTAL
    found = _manifests(root / "ckpt")
    assert list(found) == [boundary], "exactly one (emergency) checkpoint, written once"
    assert found[boundary]["reason"] == "emergency"
    assert f"SIGTERM: emergency checkpoint of step {boundary}" in errors[1]
    assert f"interruption of rank 1: emergency checkpoint of step {boundary}" in errors[0]
    state = Checkpointer(root / "ckpt").load_latest()
    assert state is not None and len(state.state[RANKS_KEY]) == 2
    seen = [part["data_state"]["samples_seen"] for part in state.state[RANKS_KEY]]
    assert seen == [16 * boundary] * 2
    # Per-rank seeds: the two ranks' data generators are in different states.
    gens = [part["generator"] for part in state.state[RANKS_KEY]]
    assert not torch.equal(gens[0], gens[1])


def test_restart_resumes_both_ranks_and_matches_an_uninterrupted_run_bitwise(
    interrupted: tuple[Path, list[int], list[Rank]], tmp_path: Path
) -> None:
    root, codes, first = interrupted
    assert codes == [EXIT_REQUEUE, EXIT_REQUEUE]
    boundary = first[0].steps()[-1] + 1
    ckpt = tmp_path / "ckpt"
    shutil.copytree(root / "ckpt", ckpt)
    resumed = worker.Job(dirs=(str(ckpt), str(ckpt)), out=str(tmp_path / "resumed"), total=TOTAL)
    codes, ranks = run(resumed)
    assert codes == [0, 0], [r.stderr() for r in ranks]
    for rank in ranks:
        assert rank.steps() == list(range(boundary, TOTAL))

    reference = worker.Job(
        dirs=(str(tmp_path / "ref"),) * 2, out=str(tmp_path / "reference"), total=TOTAL
    )
    codes, _ = run(reference)
    assert codes == [0, 0]
    for r in range(worker.WORLD):
        got, want = _weights(tmp_path / "resumed", r), _weights(tmp_path / "reference", r)
        for key in want:
            assert torch.equal(got[key], want[key]), f"rank {r}: {key} differs"
    a, b = _weights(tmp_path / "resumed", 0), _weights(tmp_path / "resumed", 1)
    assert all(torch.equal(a[k], b[k]) for k in a)  # DDP kept the replicas equal
    final = Checkpointer(ckpt).load_latest()
    assert final is not None and final.info.step == TOTAL and final.info.reason == "final"


@pytest.mark.parametrize(("sync_every", "expected"), [(1, [3, 6, 9, 12, 14]), (2, [4, 8, 12, 14])])
def test_cadence_checkpoints_happen_at_the_same_step_when_clocks_differ(
    tmp_path: Path, sync_every: int, expected: list[int]
) -> None:
    # Rank 0's clock says 1 s per step, rank 1's 1.7 s; the interval is 5 s of work.
    # Alone, rank 0 would checkpoint after steps 5 and 10, rank 1 after 3, 6, 9, 12.
    ckpt = str(tmp_path / "ckpt")
    job = worker.Job(
        dirs=(ckpt, ckpt),
        out=str(tmp_path / "out"),
        total=14,
        interval_s=5.0,
        ticks_s=(1.0, 1.7),
        sync_every=sync_every,
    )
    codes, ranks = run(job)
    assert codes == [0, 0], [r.stderr() for r in ranks]
    assert ranks[0].saved() == ranks[1].saved() == expected
    found = _manifests(tmp_path / "ckpt")
    assert sorted(found) == expected
    assert [found[s]["reason"] for s in expected] == ["periodic"] * (len(expected) - 1) + ["final"]


def test_a_failed_write_on_rank_0_stops_every_rank_without_a_hang(tmp_path: Path) -> None:
    ckpt = str(tmp_path / "ckpt")
    job = worker.Job(
        dirs=(ckpt, ckpt),
        out=str(tmp_path / "out"),
        total=10,
        interval_s=5.0,
        ticks_s=(1.0, 1.0),
        broken_writer=True,
    )
    codes, ranks = run(job)
    assert all(code not in (0, EXIT_REQUEUE) for code in codes), codes
    assert "no space left on the device" in ranks[0].stderr()
    assert "rank 0 could not write the checkpoint of step 5" in ranks[1].stderr()
    assert ranks[0].steps() == ranks[1].steps() == [0, 1, 2, 3, 4]


def test_ranks_that_see_different_checkpoints_refuse_to_start(tmp_path: Path) -> None:
    shared = str(tmp_path / "shared")
    codes, _ = run(worker.Job(dirs=(shared, shared), out=str(tmp_path / "first"), total=3))
    assert codes == [0, 0]
    # Rank 1 now looks elsewhere (a node-local disk): it finds no checkpoint.
    job = worker.Job(dirs=(shared, str(tmp_path / "elsewhere")), out=str(tmp_path / "out"), total=5)
    codes, ranks = run(job)
    assert codes[0] not in (0, EXIT_REQUEUE) and codes[1] not in (0, EXIT_REQUEUE), codes
    for rank in ranks:
        assert rank.steps() == []
        assert "the ranks found different newest checkpoints (no checkpoint … step 3)" in (
            rank.stderr()
        )


def test_single_process_options(tmp_path: Path) -> None:
    assert detect(None, None, 1) is None  # no process group: each process alone
    assert detect(False, None, 1) is None
    with pytest.raises(ConfigError, match="init_process_group"):
        detect(True, None, 1)
    with pytest.raises(ConfigError, match="sync_every"):
        next(resilient_steps(3, Checkpointer(tmp_path), sync_every=0))
    # Without a process group the loop is the single-process one.
    assert list(resilient_steps(3, Checkpointer(tmp_path), data_state={})) == [0, 1, 2]
