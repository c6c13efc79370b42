"""Cost of ``RequestMeter.settle`` after 1 h and 24 h of 10 Hz power history.

A long-running server's Meter accumulates samples; greenml issue 9 follow-up:
a settle used to copy a device's whole history (``Meter.timeline(key)``), so
it slowed down with uptime. Three forms, on the same scripted two-device
sensor (a GPU and a CPU, 10 Hz) and the same manual clock, so no sleeping:

- ``old (full copy)``: a Meter whose ``timeline`` ignores ``since_s`` and that
  never forgets: exactly the path before this change (the peer);
- ``new, since only``: ``timeline(key, since_s)``, every sample kept (an
  ``archive`` holder pins the history): the bisected read alone;
- ``new``: the default: bisected reads, and the Meter forgets what no settle
  or window needs.

Per form and history: fill the history, open a RequestMeter, settle once (that
first settle reads everything, once), then time ``--settles`` settles, each
after 1 s more of samples and a few overlapping requests. Prints the median
settle time, the samples each held at the end, and the ratios. Exit code 0:
this is a report, not a test.

Usage::

    python benchmarks/settle_speed.py [--settles 15] [--hours 1 24]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from typing import Any

HZ = 10
OFFSET_S = 1.7e9  # Unix time = manual clock + this


class Clock:
    """A manual monotonic clock."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make_meter(kind: str, clock: Clock) -> Any:
    from greenml.measure.measurement import POWER_INTEGRATED
    from greenml.measure.meter import Meter
    from greenml.measure.sensors.base import Device, Sensor

    class Wave(Sensor):
        """A GPU and a CPU whose power follows two sine waves."""

        def __init__(self) -> None:
            self._devices = [
                Device("gpu0", "gpu", "wave GPU", POWER_INTEGRATED, 0.05),
                Device("cpu0", "cpu", "wave CPU", POWER_INTEGRATED, 0.1),
            ]

        @property
        def devices(self) -> list[Device]:
            return self._devices

        def read_power_w(self) -> dict[str, float]:
            t = clock.now
            return {"gpu0": 200 + 100 * math.sin(t * 0.7), "cpu0": 40 + 10 * math.sin(t * 0.13)}

    class FullCopyMeter(Meter):
        def timeline(
            self, key: str, since_s: float | None = None
        ) -> tuple[list[float], list[float]]:
            return super().timeline(key)

        def forget_before(self, key: str, time_s: float, *, holder: str | None = None) -> int:
            return 0

    cls = FullCopyMeter if kind == "old (full copy)" else Meter
    meter = cls(sensors=[Wave()], sample_hz=0, clock=clock, wall_clock=lambda: clock.now + OFFSET_S)
    if kind == "new, since only":
        for key in ("gpu0", "cpu0"):
            meter.forget_before(key, OFFSET_S, holder="archive")
    return meter


def advance(meter: Any, clock: Clock, seconds: float) -> None:
    for _ in range(round(seconds * HZ)):
        clock.now += 1.0 / HZ
        meter.sample_now()


def settle_times_s(kind: str, hours: float, settles: int) -> tuple[list[float], int]:
    """Median-ready settle durations, and the samples the Meter holds at the end."""
    from greenml.serve.requests import RequestMeter

    clock = Clock()
    meter = make_meter(kind, clock)
    advance(meter, clock, hours * 3600)
    rm = RequestMeter(meter, settle_every_s=0, clock=clock, wall_clock=lambda: clock.now + OFFSET_S)
    rm.settle()  # the first one reads the whole history, once
    out = []
    for i in range(settles):
        tokens = [rm.begin(f"route{k % 2}") for k in range(4)]
        advance(meter, clock, 0.5)
        for token in tokens[:3]:
            rm.finish(token)
        advance(meter, clock, 0.5)
        rm.finish(tokens[3])
        clock.now += 0.06  # past the guard
        t0 = time.perf_counter()
        rm.settle()
        out.append(time.perf_counter() - t0)
        if i == 0:
            out.clear()  # the second settle does the first forgetting: not steady state
    held = len(meter.timeline("gpu0")[0])
    report = rm.report()
    rm.close()
    assert report.requests == 4 * settles, report
    return out, held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settles", type=int, default=15)
    parser.add_argument("--hours", type=float, nargs="+", default=[1.0, 24.0])
    args = parser.parse_args(argv)
    kinds = ["old (full copy)", "new, since only", "new"]
    medians: dict[tuple[str, float], float] = {}
    print(f"settle after H hours of {HZ} Hz history (2 devices), median of {args.settles} settles")
    print(f"  {'form':<17} {'history':>8} {'settle ms':>10} {'samples held':>13}")
    for hours in args.hours:
        for kind in kinds:
            times, held = settle_times_s(kind, hours, args.settles + 1)
            medians[kind, hours] = statistics.median(times)
            print(f"  {kind:<17} {hours:7g}h {medians[kind, hours] * 1e3:10.3f} {held:13,}")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load:.1f}")
    lo, hi = min(args.hours), max(args.hours)
    for kind in kinds:
        growth = medians[kind, hi] / medians[kind, lo]
        print(f"  {kind:<17} settle at {hi:g}h / at {lo:g}h: {growth:6.2f}x")
    for hours in args.hours:
        ratio = medians["old (full copy)", hours] / medians["new", hours]
        print(f"  old / new at {hours:g}h: {ratio:8.1f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
