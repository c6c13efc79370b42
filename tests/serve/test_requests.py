"""RequestMeter: lazy, batched settling of request intervals against a fake power trace."""

from __future__ import annotations

import math

import pytest

from greenml.serve.requests import RequestMeter, SettledRequest
from tests.helpers import ManualClock
from tests.serve.conftest import WALL_OFFSET, fake_meter, sample_at


def make(clock: ManualClock, watts: float = 100.0) -> tuple[RequestMeter, object]:
    meter = fake_meter(clock, [(0.0, watts)])
    rm = RequestMeter(
        meter, settle_every_s=0, guard_s=0, clock=clock, wall_clock=lambda: clock() + WALL_OFFSET
    )
    return rm, meter


def at(clock: ManualClock, t: float) -> None:
    clock.now = 100.0 + t


def test_overlapping_requests_share_power_and_idle_is_apart(clock: ManualClock) -> None:
    rm, meter = make(clock)
    seen: list[SettledRequest] = []
    rm.add_listener(seen.append)
    at(clock, 1)
    a = rm.begin("a")
    at(clock, 2)
    b = rm.begin("b")
    at(clock, 4)
    rm.finish(a)
    at(clock, 5)
    sample_at(meter, clock, [5])  # power known up to t=5: A is covered, B still in flight
    assert rm.settle() == 1
    assert [(s.route, s.energy_j) for s in seen] == [("a", pytest.approx(200.0))]
    assert rm.idle_energy_j() == pytest.approx(100.0)  # 0-1 s
    at(clock, 6)
    rm.finish(b)
    assert rm.settle() == 0  # B ended after the last sample: it waits for the next one
    sample_at(meter, clock, [10])
    assert rm.settle() == 1
    # B: 2-4 s shared with A (100 J, A was kept for this) + 4-6 s alone (200 J)
    assert seen[1].route == "b"
    assert seen[1].energy_j == pytest.approx(300.0)
    assert seen[1].duration_s == pytest.approx(4.0)
    assert rm.idle_energy_j() == pytest.approx(100.0 + 400.0)  # and 6-10 s
    report = rm.report()
    assert report.energy_j + report.idle_energy_j == pytest.approx(100.0 * 10)
    assert report.unsettled == 0 and report.in_flight == 0
    assert report.method == "power-integrated"


def test_report_per_route(clock: ManualClock) -> None:
    rm, meter = make(clock, watts=360.0)
    for t0 in (1.0, 4.0, 7.0):
        at(clock, t0)
        with rm.request("GET /embed"):
            at(clock, t0 + 2.0)
    at(clock, 9.5)
    token = rm.begin("GET /slow")
    sample_at(meter, clock, [float(t) for t in range(1, 11)])  # 1 Hz
    report = rm.report()
    (route,) = report.routes
    assert route.route == "GET /embed" and route.requests == 3
    assert route.j_per_request == pytest.approx(720.0)
    assert route.wh_per_1000_requests == pytest.approx(200.0)  # 720 J × 1000 / 3600
    # a 2 s request sampled at 1 Hz: ±25 % from sampling, ±2 % from the device
    assert route.uncertainty_rel == pytest.approx(math.hypot(0.02, 0.5 * 1.0 / 2.0))
    assert report.in_flight == 1
    assert rm.finished_counts() == {"GET /embed": 3}
    rm.finish(token)
    as_dict = report.to_dict()
    assert as_dict["routes"][0]["wh_per_1000_requests"] == pytest.approx(200.0)
    assert as_dict["attribution"] == "time-overlap share of sampled power"


def test_finish_can_relabel_and_unknown_tokens_are_ignored(clock: ManualClock) -> None:
    rm, meter = make(clock)
    at(clock, 1)
    token = rm.begin()
    at(clock, 2)
    rm.finish(token, "POST /items")
    rm.finish(token)  # twice: ignored
    rm.finish(12345)
    sample_at(meter, clock, [3])
    assert [r.route for r in rm.report().routes] == ["POST /items"]


def test_device_filter(clock: ManualClock) -> None:
    meter = fake_meter(clock, [(0.0, 100.0)])
    with pytest.raises(Exception, match="no device"):
        RequestMeter(meter, devices=["gpu"], settle_every_s=0)
    rm = RequestMeter(meter, devices=["cpu"], settle_every_s=0, clock=clock)
    assert rm.devices == ("cpu0",)


def test_background_thread_settles(clock: ManualClock) -> None:
    import threading

    meter = fake_meter(clock, [(0.0, 100.0)])
    settled = threading.Event()
    rm = RequestMeter(
        meter, settle_every_s=0.01, guard_s=0, clock=clock,
        wall_clock=lambda: clock() + WALL_OFFSET,
    )  # fmt: skip
    rm.add_listener(lambda r: settled.set())
    at(clock, 1)
    with rm.request("x"):
        at(clock, 2)
    sample_at(meter, clock, [3])
    assert settled.wait(5), "the settle thread never charged the finished request"
    rm.close()
