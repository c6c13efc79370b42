"""The idle floor: a request's energy = its share of the floor (static) + what it added
(dynamic); the dynamic part of identical requests is the same alone or in a crowd."""

from __future__ import annotations

import random
from typing import Any

import pytest

from greenml.llm.floor import IdleFloor
from greenml.llm.inflight import Ledger

BASE_W, A, B, DT = 50.0, 0.02, 0.2, 0.01


class Source:
    method, uncertainty_rel, scope = "counter", 0.05, "simulated"

    def __init__(self) -> None:
        self.j = 0.0

    def total_j(self) -> float:
        return self.j


def _serve(requests: list[tuple[float, int, int]]) -> tuple[Ledger, list[Any], Source]:
    """A step engine: the arrival step prefills (A J a prompt token) and yields the first
    token; each later step yields a token per request (B J each); plus BASE_W always."""
    src, now, done = Source(), [0.0], []
    ledger = Ledger(src, on_settled=done.append, clock=lambda: now[0], wall_clock=lambda: 1e9)
    made: dict[int, int] = {}
    reqs: dict[int, Any] = {}
    pending = sorted(range(len(requests)), key=lambda i: requests[i][0])
    step = 0
    while pending or made:
        t = step * DT
        now[0] = t
        arrived = []
        while pending and requests[pending[0]][0] <= t:
            i = pending.pop(0)
            reqs[i] = ledger.begin("/v1/chat/completions", "m", "t", True, requests[i][1])
            arrived.append(i)
        src.j += BASE_W * DT + sum(A * requests[i][1] for i in arrived) + B * len(made)
        now[0] = t + DT
        for i in [*made, *arrived]:
            made[i] = made.get(i, 0) + 1
            reqs[i].note_chunk(now[0] - 1e-9, 1)
            if made[i] >= requests[i][2]:
                req = reqs.pop(i)
                req.prompt_tokens, req.completion_tokens = requests[i][1], requests[i][2]
                ledger.finish(req)
                del made[i]
        ledger.tick()
        step += 1
    now[0] += DT
    ledger.tick()
    return ledger, done, src


def test_identical_requests_add_the_same_energy_alone_or_in_a_crowd() -> None:
    ledger, alone, _ = _serve([(0.5, 200, 20)])  # half a second idle first: the floor is seen
    assert ledger.floor.floor_w == pytest.approx(BASE_W)
    rng = random.Random(1)
    crowd = [(rng.uniform(0.5, 3.0), rng.choice([20, 400, 1000]), rng.choice([5, 20, 80]))
             for _ in range(150)]  # fmt: skip
    ledger, done, src = _serve([*crowd, (1.7, 200, 20)])
    probe = next(r for r in done if r.arrival_s == 1.7 and r.prompt_tokens == 200)
    own = A * 200 + B * 19
    assert alone[0].dynamic_j == pytest.approx(own, rel=1e-6)
    assert probe.dynamic_j == pytest.approx(alone[0].dynamic_j, rel=0.10)
    # the floor is shared by the crowd: the whole figure is batching's economy, not an error
    assert probe.energy_j < 0.6 * alone[0].energy_j
    assert sum(r.static_j + r.dynamic_j for r in done) == pytest.approx(ledger.totals.attributed_j)
    assert ledger.totals.attributed_j + ledger.totals.idle_j == pytest.approx(src.j, rel=1e-12)


def test_no_floor_until_idle_is_seen_then_the_median() -> None:
    floor = IdleFloor(min_intervals=3)
    assert floor.floor_w is None and floor.static_j(1.0, 80.0) == 0.0
    for watts in (40.0, 41.0, 400.0):  # a ramp-down spike does not lift the median
        floor.add(0.1, watts * 0.1)
    assert floor.floor_w == pytest.approx(41.0)
    assert floor.static_j(0.5, 100.0) == pytest.approx(20.5)
    assert floor.static_j(0.5, 10.0) == 10.0  # never more than the interval drew
    floor.add(0.0, 1.0)
    floor.add(0.1, float("nan"))
    assert floor.floor_w == pytest.approx(41.0)
