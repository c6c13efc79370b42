"""The energy of each attempt of a batch, from a Ray job report (no cluster needed)."""

from __future__ import annotations

import pytest

from greenml.integrations.ray import RayJobReport, TaskEnergy
from greenml.integrations.ray_batch import TASK_NAME, Attempt, attempt_energy

LIVE, DEAD = "node-live", "node-dead"


def _task(attempt_id: str, node: str, start: float, end: float, joules: float) -> TaskEnergy:
    return TaskEnergy(attempt_id, TASK_NAME, node, node, start, end, joules, {"gpu0": joules})


def _node(node: str, end_s: float, lost: bool) -> dict[str, object]:
    return {"node": node, "node_id": node, "node_rank": 0, "energy_j": 0.0, "tasks": 1,
            "idle_j": 0.0, "duration_s": 10.0, "end_s": end_s, "uncertainty_rel": 0.05,
            "method": "counter", "lost": lost}  # fmt: skip


def test_a_lost_node_s_attempt_is_measured_to_its_last_report_and_estimated_after() -> None:
    # live node: two attempts of 1 s each at 100 W; the dead node reported until t=10.5,
    # and was gone by 10.5 + 0.25; its attempt began at 10.0 and the retry at 12.0
    attempts = [
        Attempt("a", 0, LIVE, 9.0, 10.0, True, True),
        Attempt("b", 1, LIVE, 12.0, 13.0, True, True),
        Attempt("c", 1, DEAD, 10.0, 12.0, False, False),
    ]
    job = RayJobReport("job", [_task("a", LIVE, 9.0, 10.0, 100.0),
                               _task("b", LIVE, 12.0, 13.0, 100.0),
                               _task("c", DEAD, 10.0, 12.0, 40.0)],
                       [_node(LIVE, 14.0, False), _node(DEAD, 10.5, True)], lost_nodes=[DEAD])
    out = {a.attempt_id: a for a in attempt_energy(attempts, job, progress_s=0.25)}
    lost = out["c"]
    assert lost.end_s == pytest.approx(10.75)  # dead by its missed report, not at the retry
    assert lost.estimated_j == pytest.approx(100.0 * 0.25)  # live nodes' 100 W for 0.25 s
    assert lost.energy_j == pytest.approx(40.0 + 25.0)
    assert out["a"].energy_j == 100.0 and out["a"].estimated_j == 0.0


def test_a_lost_node_that_never_reported_is_estimated_whole() -> None:
    attempts = [Attempt("a", 0, LIVE, 0.0, 2.0, True, True),
                Attempt("c", 1, DEAD, 1.0, 5.0, False, False)]  # fmt: skip
    job = RayJobReport("job", [_task("a", LIVE, 0.0, 2.0, 300.0)], [_node(LIVE, 6.0, False)],
                       lost_nodes=[DEAD])  # fmt: skip
    lost = attempt_energy(attempts, job, progress_s=1.0)[1]
    assert lost.end_s == pytest.approx(2.0)  # at most one report period after it started
    assert lost.estimated_j == pytest.approx(150.0) and lost.energy_j == pytest.approx(150.0)
