"""Projection of total energy and time: interval coverage, narrowing, the tracker."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from greenml.run.projection import Point, ProgressTracker, project, project_sum, t_quantile


def synthetic(rng: random.Random, n: int) -> list[Point]:
    """Steps of gamma-distributed duration (skewed) at a noisy ~300 W, after 20 s of setup."""
    t, e, points = 100.0 + 20.0, 20.0 * 150, []
    for k in range(1, n + 1):
        dt = rng.gammavariate(4.0, 0.25)  # mean 1 s, cv 0.5
        t += dt
        e += dt * rng.gauss(300.0, 30.0)
        points.append(Point(t, float(k), e))
    return points


def test_interval_covers_the_truth_at_nominal_rate() -> None:
    rng = random.Random(7)
    n, trials = 200, 400
    for k in (3, 10, 50):
        hits_e = hits_t = 0
        for _ in range(trials):
            points = synthetic(rng, n)
            p = project(points[:k], n, started_at=100.0)
            assert p is not None and p.total_energy_j.low is not None
            truth_e, truth_t = points[-1].energy_j, points[-1].t - 100.0
            hits_e += p.total_energy_j.low <= truth_e <= p.total_energy_j.high  # type: ignore[operator]
            hits_t += p.duration_s.low <= truth_t <= p.duration_s.high  # type: ignore[operator]
        assert hits_e / trials >= 0.90, (k, hits_e)
        assert hits_t / trials >= 0.90, (k, hits_t)


def test_interval_narrows_as_steps_accumulate() -> None:
    rng = random.Random(1)
    widths: dict[int, float] = {}
    for k in (5, 20, 80, 160):
        total = 0.0
        for _ in range(100):
            p = project(synthetic(rng, 200)[:k], 200, started_at=100.0)
            assert p is not None
            e = p.total_energy_j
            total += (e.high - e.low) / e.value  # type: ignore[operator]
        widths[k] = total / 100
    ks = sorted(widths)
    assert all(widths[a] > widths[b] for a, b in itertools.pairwise(ks))


def test_exact_when_steps_are_regular() -> None:
    points = [Point(10.0 + k, k, 100.0 * k) for k in range(1, 6)]
    p = project(points, 10, started_at=10.0, g_per_kwh=400.0, usd_per_kwh=0.2)
    assert p is not None
    assert p.total_energy_j.value == pytest.approx(1000.0)
    assert p.total_energy_j.high == pytest.approx(1000.0)
    assert p.duration_s.value == pytest.approx(10.0)
    assert p.fraction == 0.5 and p.eta_unix_s == pytest.approx(20.0)
    assert p.co2_g is not None and p.co2_g.value == pytest.approx(1000 / 3.6e6 * 400)


def test_too_few_steps_give_a_point_without_interval() -> None:
    assert project([], 10, 0.0) is None
    p = project([Point(1.0, 1, 5.0), Point(2.0, 2, 10.0)], 10, 0.0)
    assert p is not None and p.total_energy_j.value == pytest.approx(50.0)
    assert p.total_energy_j.low is None
    done = project_sum(7.0, [(1, 1.0), (1, 2.0)], remaining=0)
    assert done.value == done.low == done.high == 7.0


def test_t_quantile_known_values() -> None:
    assert t_quantile(0.95, 1) == pytest.approx(12.7062, rel=1e-4)
    assert t_quantile(0.95, 10) == pytest.approx(2.2281, rel=1e-4)
    assert t_quantile(0.95, 5000) == pytest.approx(1.95996, rel=1e-4)


def test_tracker_pairs_progress_with_energy(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    lines = [{"kind": "progress", "t": 100.0 + k, "rank": 0, "step": k, "total": 10}
             for k in range(1, 5)]  # fmt: skip
    gpu = {"gpu": [50.0, "counter", 0.05]}
    lines.append({"kind": "window", "t": 101, "rank": 1, "name": "step", "start_s": 100.0,
                  "end_s": 101.0, "energy_j": 50.0, "components": gpu})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    tracker = ProgressTracker(str(path), started_at=100.0)
    p = tracker.poll(energy_j=400.0, now=104.0)  # 100 W all along
    assert p is not None and p.total_energy_j.value == pytest.approx(1000.0)
    assert [w.name for w in tracker.windows] == ["step/rank1"]
    assert tracker.windows[0].total_j == 50.0
    summary = tracker.summary(g_per_kwh=360.0)
    assert summary is not None and summary["step"] == 4 and summary["total"] == 10
    assert summary["projection"]["co2_g"]["value"] == pytest.approx(0.1)
