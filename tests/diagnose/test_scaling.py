"""Scaling efficiency across device counts, and the comm/compute split."""

from __future__ import annotations

import pytest

from greenml.diagnose.scaling import (
    ScalingPoint,
    analyze_scaling,
    comm_compute_split,
    group_runs,
    scaling_point,
)


def record(devices: int, duration_s: float, energy_j: float) -> dict[str, object]:
    return {
        "id": f"r{devices}", "name": "bert", "tags": {"devices": str(devices)},
        "duration_s": duration_s, "energy": {"total_j": energy_j}, "progress": {"total": 1000},
    }  # fmt: skip


def test_efficiency_from_1_2_4_device_runs() -> None:
    records = [record(1, 400.0, 1.2e5), record(2, 220.0, 1.3e5), record(4, 125.0, 1.5e5)]
    records.append({**record(8, 1.0, 1.0), "name": "other"})
    (same,) = [v for k, v in group_runs(records).items() if k == "bert"]
    report = analyze_scaling([scaling_point(r) for r in same])
    rows = {r.devices: r for r in report.rows}
    assert report.baseline_devices == 1 and set(rows) == {1, 2, 4}
    assert rows[2].speedup == pytest.approx(400 / 220)
    assert rows[2].efficiency == pytest.approx(400 / 220 / 2)
    assert rows[4].efficiency == pytest.approx(400 / 125 / 4)
    assert rows[4].energy_per_work_j == pytest.approx(150.0)
    assert rows[4].energy_ratio == pytest.approx(1.25)
    assert "efficiency 80%" in report.text


def test_devices_counted_from_measured_gpus_and_work_normalized() -> None:
    rec = {"duration_s": 10.0, "energy": {"total_j": 100.0,
           "components": {"gpu": {"devices": {"gpu0": {}, "gpu1": {}}}}}}  # fmt: skip
    p = scaling_point(rec)
    assert p.devices == 2 and p.work == 1.0
    half = analyze_scaling([ScalingPoint(1, 10.0, 100.0, work=1.0),
                            ScalingPoint(2, 10.0, 200.0, work=2.0)])  # fmt: skip
    assert half.rows[1].speedup == pytest.approx(2.0) and half.rows[1].efficiency == 1.0
    assert analyze_scaling([]).rows == []


def test_comm_compute_split() -> None:
    windows = []
    for r in range(2):
        for i in range(10):
            t = 100.0 + i
            windows.append({"name": f"compute/rank{r}", "started_at": t, "duration_s": 0.7,
                            "energy_j": 210.0})  # fmt: skip
            windows.append({"name": f"comm/rank{r}", "started_at": t + 0.7, "duration_s": 0.3,
                            "energy_j": 45.0})  # fmt: skip
    split = comm_compute_split(windows)
    assert split.comm_fraction == pytest.approx(0.3)
    assert split.per_rank[1] == pytest.approx((3.0, 7.0))
    assert split.comm_energy_j == pytest.approx(900.0)
    assert "30%" in split.text
