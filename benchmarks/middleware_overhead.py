"""Per-request cost of EnergyMiddleware, on a minimal ASGI app called in-process.

Target (greenml issue 9): the middleware adds ≤ 100 µs per request. The same
minimal app (one ``http.response.start`` and one ``http.response.body``) is
called directly, with no server or socket, in four forms, interleaved in
rounds so that all see the same machine load:

- ``bare``: the app itself;
- ``no-op wrap``: a pure ASGI middleware that only awaits the app (the peer:
  what any middleware layer costs);
- ``greenml``: ``EnergyMiddleware`` with a live RequestMeter (a Meter sampling
  a fake sensor at 10 Hz, settling in its background thread every second);
- ``greenml+route``: the same, the scope carrying a matched route as Starlette sets it.

Overhead = median per-request time with the middleware − bare. Exit code 0
even when the target fails: this is a report, not a test.

Usage::

    python benchmarks/middleware_overhead.py [--requests 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from typing import Any

TARGET_US = 100.0


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


class NoOp:
    def __init__(self, inner: Any) -> None:
        self.app = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


class Route:
    path = "/items/{item_id}"


async def receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def send(message: dict[str, Any]) -> None:
    return None


async def per_request_us(target: Any, scope: dict[str, Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await target(scope, receive, send)
    return (time.perf_counter() - t0) / n * 1e6


async def measure(n: int, rounds: int) -> dict[str, list[float]]:
    from greenml.measure.measurement import POWER_INTEGRATED
    from greenml.measure.meter import Meter
    from greenml.measure.sensors.fake import FakeDevice, FakeSensor
    from greenml.serve.middleware import EnergyMiddleware
    from greenml.serve.requests import RequestMeter

    sensor = FakeSensor([FakeDevice("cpu0", [(0.0, 100.0)], method=POWER_INTEGRATED)])
    meter = Meter(sensors=[sensor], sample_hz=10)
    rm = RequestMeter(meter, settle_every_s=1.0)
    scope = {"type": "http", "method": "GET", "path": "/items/1", "headers": []}
    routed = dict(scope, route=Route())
    forms = {
        "bare": (app, scope),
        "no-op wrap": (NoOp(app), scope),
        "greenml": (EnergyMiddleware(app, rm), scope),
        "greenml+route": (EnergyMiddleware(app, rm), routed),
    }
    out: dict[str, list[float]] = {name: [] for name in forms}
    for target, s in forms.values():
        await per_request_us(target, dict(s), 1000)  # warm up
    for _ in range(rounds):
        for name, (target, s) in forms.items():
            out[name].append(await per_request_us(target, dict(s), n))
    report = rm.report()
    rm.close()
    meter.close()
    settled = report.requests
    print(f"requests settled by the RequestMeter meanwhile: {settled:,} "
          f"(+{report.unsettled} awaiting a sample)")  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    results = asyncio.run(measure(args.requests, args.rounds))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.rounds} rounds × {args.requests:,} requests per form; load average {load:.1f}")
    bare = statistics.median(results["bare"])
    print(f"  {'form':<14} {'µs/request (median of rounds)':>30} {'overhead µs':>12}")
    for name, values in results.items():
        median = statistics.median(values)
        print(f"  {name:<14} {median:30.2f} {median - bare:12.2f}")
    peer = statistics.median(results["no-op wrap"]) - bare
    ours = statistics.median(results["greenml+route"]) - bare
    print(f"  overhead ratio greenml+route / no-op wrap: {ours / peer:.1f}" if peer > 0 else "")
    verdict = "PASS" if ours <= TARGET_US else "FAIL"
    print(f"  target: middleware overhead ≤ {TARGET_US:.0f} µs → {ours:.2f} µs {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
