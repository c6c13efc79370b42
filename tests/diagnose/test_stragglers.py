"""Stragglers: an injected slow rank is found, with its slack and the waiting energy."""

from __future__ import annotations

import random
from typing import Any

import pytest

from greenml.diagnose.stragglers import find_stragglers, parse_window


def step_windows(steps: int = 50, slow_rank: int = 2) -> list[dict[str, Any]]:
    """4 ranks, 1.0 s steps at 300 W; ``slow_rank`` takes 1.2 s; steps start together."""
    rng = random.Random(3)
    out, t = [], 1000.0
    for _ in range(steps):
        durs = {r: (1.2 if r == slow_rank else 1.0) + rng.uniform(0, 0.01) for r in range(4)}
        for r, d in durs.items():
            out.append({"name": "step", "rank": r, "start_s": t, "end_s": t + d,
                        "energy_j": 300.0 * d})  # fmt: skip
        t += max(durs.values()) + 0.05  # the collective
    return out


def test_slow_rank_is_found_with_its_slack_and_waiting_energy() -> None:
    windows = step_windows()
    report = find_stragglers(windows)
    assert report.steps == 50 and report.critical_rank == 2 and report.critical_share == 1.0
    by = {s.rank: s for s in report.ranks}
    assert by[2].mean_slack_s == 0.0 and by[2].wait_energy_j == 0.0
    for r in (0, 1, 3):
        assert by[r].mean_slack_s == pytest.approx(0.2, abs=0.011)
        assert by[r].power_w == pytest.approx(300.0)
        # waiting energy = power × slack, summed over steps
        assert by[r].wait_energy_j == pytest.approx(300.0 * by[r].total_slack_s)
    assert report.wait_energy_j == pytest.approx(3 * 50 * 0.2 * 300.0, rel=0.06)
    assert "rank 2" in report.text


def test_stored_windows_with_rank_in_the_name() -> None:
    stored = [
        {"name": f"step/rank{w['rank']}", "started_at": "2024-01-01T00:00:00+00:00",
         "duration_s": w["end_s"] - w["start_s"], "energy_j": w["energy_j"]}
        for w in step_windows(10, slow_rank=1)
    ]  # fmt: skip
    assert parse_window(stored[0]).rank == 0 and parse_window(stored[0]).name == "step"
    report = find_stragglers(stored)
    assert report.critical_rank == 1 and report.steps == 10


def test_single_rank_has_no_straggler() -> None:
    one = [w for w in step_windows(5) if w["rank"] == 0]
    report = find_stragglers(one)
    assert report.critical_rank is None and report.wait_energy_j == 0.0
    assert find_stragglers([]).steps == 0
