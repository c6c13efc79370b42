from __future__ import annotations

import pytest

from greenml.measure.timeline import PowerTimeline


def make(points: list[tuple[float, float]]) -> PowerTimeline:
    line = PowerTimeline()
    for t, w in points:
        line.append(t, w)
    return line


def test_trapezoid_over_a_ramp_is_exact() -> None:
    line = make([(0, 0), (10, 200)])
    assert line.energy_between(0, 10) == pytest.approx(1000.0)
    # linear power: the integral from 0 to 5 is 0.5 * 5 * 100
    assert line.energy_between(0, 5) == pytest.approx(250.0)
    assert line.power_at(2.5) == pytest.approx(50.0)


def test_power_is_held_before_first_and_after_last_sample() -> None:
    line = make([(10, 100), (20, 300)])
    assert line.energy_between(0, 10) == pytest.approx(1000.0)
    assert line.energy_between(20, 25) == pytest.approx(1500.0)
    assert line.energy_between(15, 15) == 0.0
    assert line.energy_between(16, 15) == 0.0


def test_out_of_order_samples_are_ignored_and_empty_timeline_is_zero() -> None:
    line = make([(1, 10), (1, 99), (0.5, 99), (2, 10)])
    assert len(line) == 2
    assert PowerTimeline().energy_between(0, 10) == 0.0
    assert PowerTimeline().power_at(3) is None


def test_many_windows_match_the_whole() -> None:
    line = make([(float(t), 50.0 + (t % 7) * 10) for t in range(1000)])
    pieces = sum(line.energy_between(a, a + 3.3) for a in [i * 3.3 for i in range(300)])
    assert pieces == pytest.approx(line.energy_between(0, 990), rel=1e-12)


# ----------------------------------------------------------- incremental reads and trimming


def test_points_since_returns_the_sample_before_and_the_rest() -> None:
    line = make([(float(t), 10.0 * t) for t in range(10)])
    assert line.points(4.5) == (
        [4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
        [40.0, 50.0, 60.0, 70.0, 80.0, 90.0],
    )
    assert line.points(5.0)[0] == [5.0, 6.0, 7.0, 8.0, 9.0]  # "at or after": 5 itself suffices
    assert line.points(-3.0) == line.points()
    assert line.points(99.0) == ([9.0], [90.0])
    assert PowerTimeline().points(1.0) == ([], [])


def test_trim_keeps_every_later_query_exact_and_never_rebases() -> None:
    points = [(0.1 * t, 50.0 + (t * 37 % 11) * 9.0) for t in range(2000)]
    full, trimmed = make(points), make(points)
    assert trimmed.trim(61.23) == 612  # keeps the sample at 61.2, the last one before 61.23
    assert len(trimmed) == 2000 - 612 and trimmed.first_time_s == pytest.approx(61.2)
    for a in (61.23, 61.25, 100.0, 150.05, 199.9, 250.0):
        assert trimmed.energy_at(a) == full.energy_at(a)
        assert trimmed.power_at(a) == full.power_at(a)
        assert trimmed.energy_between(a, a + 17.3) == full.energy_between(a, a + 17.3)
    assert trimmed.energy_between(61.23, 300.0) == full.energy_between(61.23, 300.0)
    trimmed.append(300.0, 75.0)
    full.append(300.0, 75.0)
    assert trimmed.energy_at(300.0) == full.energy_at(300.0)
    # before the cut, answers are extrapolations from the first kept sample, not history
    assert trimmed.energy_between(0.0, 10.0) != full.energy_between(0.0, 10.0)


def test_trim_min_fraction_and_nothing_to_drop() -> None:
    line = make([(float(t), 100.0) for t in range(100)])
    assert line.trim(-5.0) == 0 and line.trim(0.0) == 0  # the first sample is the one kept
    assert line.trim(30.0, min_fraction=0.5) == 0  # 30 of 100: not worth a copy
    assert len(line) == 100
    assert line.trim(60.0, min_fraction=0.5) == 60
    assert line.points()[0][0] == 60.0
    assert PowerTimeline().trim(10.0) == 0


def test_trim_while_another_thread_appends_loses_nothing() -> None:
    import sys
    import threading
    import time

    count = 20_000
    reference = make([(float(t), float(t % 13)) for t in range(count)])
    line = PowerTimeline()
    done = threading.Event()

    def writer() -> None:
        for t in range(count):
            line.append(float(t), float(t % 13))
            if t % 500 == 0:
                time.sleep(0)  # let the trimmer in at least this often
        done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so trims land between appends
    try:
        thread = threading.Thread(target=writer)
        thread.start()
        trims = 0
        while not done.is_set():
            last = line.last_time_s
            if last is not None:
                trims += line.trim(last - 50.0) > 0
                assert line.energy_between(last - 50.0, last) == reference.energy_between(
                    last - 50.0, last
                )
        thread.join()
    finally:
        sys.setswitchinterval(interval)
    line.trim(count - 50.0)
    assert trims > 10
    assert line.energy_at(count + 5.0) == reference.energy_at(count + 5.0)
    assert line.points() == reference.points(count - 50.0)
