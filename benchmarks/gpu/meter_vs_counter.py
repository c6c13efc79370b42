"""Meter vs counter: greenml's window energy against raw NVML counter deltas and power integration.

A steady matrix-multiply load, then a bursty one (on/off), each for about 11 s.
Every 0.1 s the script reads the raw energy counter and opens/closes greenml
Meter windows, so the same time span gives windows of 0.1 s, 1 s and 10 s.
Two sampler threads poll ``nvmlDeviceGetPowerUsage`` at 10 Hz and 100 Hz (and
the instantaneous power field at 100 Hz where the driver has it); their
readings are integrated (trapezoid) over every window. Errors are relative to
the counter delta. It also probes how often the counter and the power reading
change (the update period), polling them as fast as Python can.

    python benchmarks/gpu/meter_vs_counter.py --out DIR [--cpu-smoke]
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from _common import Part, counter_j, first_handle, median, pct, summary

GRAINS = (("0.1 s", 1), ("1 s", 10), ("10 s", 100))  # window length in 0.1-s ticks
TICKS = 100


class Load(threading.Thread):
    """Matrix products on the device: all the time, or ``on_s`` on and ``off_s`` off."""

    def __init__(self, device: str, on_s: float | None = None, off_s: float = 0.0) -> None:
        super().__init__(daemon=True, name="load")
        import torch

        self.torch = torch
        n, dtype = (8192, torch.bfloat16) if device == "cuda" else (192, torch.float32)
        self.a = torch.randn(n, n, device=device, dtype=dtype)
        self.b = torch.randn(n, n, device=device, dtype=dtype)
        self.device, self.on_s, self.off_s = device, on_s, off_s
        self.stop = threading.Event()
        self.products = 0

    def _sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def _burst(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.stop.is_set():
            for _ in range(8):
                self.a @ self.b
            self._sync()
            self.products += 8
            if self.device == "cpu":
                time.sleep(0.001)  # smoke: leave the GIL to the threads that read

    def run(self) -> None:
        while not self.stop.is_set():
            if self.on_s is None:
                self._burst(0.05)
            else:
                self._burst(self.on_s)
                self.stop.wait(self.off_s)


class Poller(threading.Thread):
    """Reads ``read()`` (watts) every ``1/hz`` s into ``samples`` as (monotonic s, W)."""

    def __init__(self, name: str, hz: float, read: Callable[[], float]) -> None:
        super().__init__(daemon=True, name=name)
        self.period, self.read = 1.0 / hz, read
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        tick = time.monotonic()
        while not self.stop.is_set():
            watts = self.read()
            self.samples.append((time.monotonic(), watts))
            tick += self.period
            self.stop.wait(max(0.0, tick - time.monotonic()))


def integrate(samples: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Trapezoid of the samples over [t0, t1], linear between samples, held at the ends."""
    if not samples:
        return math.nan
    ts = [t for t, _ in samples]
    ws = [w for _, w in samples]

    def at(t: float) -> float:
        if t <= ts[0]:
            return ws[0]
        if t >= ts[-1]:
            return ws[-1]
        lo, hi = 0, len(ts) - 1
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ts[mid] <= t else (lo, mid)
        a = (t - ts[lo]) / (ts[hi] - ts[lo]) if ts[hi] > ts[lo] else 0.0
        return ws[lo] + a * (ws[hi] - ws[lo])

    points = [(t0, at(t0)), *[(t, w) for t, w in samples if t0 < t < t1], (t1, at(t1))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in itertools.pairwise(points))


def instant_power_reader(nvml: Any, handle: Any) -> Callable[[], float] | None:
    """A reader of the instantaneous power field (W), None where the driver lacks it."""
    field = getattr(nvml, "NVML_FI_DEV_POWER_INSTANT", None)
    if field is None or not hasattr(nvml, "nvmlDeviceGetFieldValues"):
        return None

    def read() -> float:
        value = nvml.nvmlDeviceGetFieldValues(handle, [field])[0]
        if value.nvmlReturn != 0:
            raise RuntimeError(f"field {field}: NVML return {value.nvmlReturn}")
        return float(value.value.uiVal) / 1000.0

    try:
        read()
    except Exception as exc:
        print(f"instantaneous power field unavailable: {exc}")
        return None
    return read


def update_period(read: Callable[[], float], seconds: float) -> dict[str, Any]:
    """Poll ``read`` flat out for ``seconds``: how often its value changes, and call cost."""
    changes: list[float] = []
    calls = 0
    last = read()
    start = time.monotonic()
    now = start
    while now - start < seconds:
        value = read()
        calls += 1
        now = time.monotonic()
        if value != last:
            changes.append(now)
            last = value
    gaps = [b - a for a, b in itertools.pairwise(changes)]
    return {
        "polls": calls,
        "call_us": (now - start) / max(calls, 1) * 1e6,
        "changes": len(changes),
        "period_ms_median": median(gaps) * 1e3 if gaps else None,
        "period_ms_min": min(gaps) * 1e3 if gaps else None,
        "period_ms_max": max(gaps) * 1e3 if gaps else None,
    }


def run_phase(part: Part, meter: Any, nvml: Any, handle: Any, load: Load, tick_s: float) -> dict:
    """One load: marks every tick, Meter windows and power integration per grain."""
    readers: dict[str, Callable[[], float]] = {
        "power 10 Hz": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
        "power 100 Hz": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
    }
    instant = instant_power_reader(nvml, handle)
    if instant is not None:
        readers["instant 100 Hz"] = instant
    hz = {"power 10 Hz": 10.0, "power 100 Hz": 100.0, "instant 100 Hz": 100.0}
    pollers = {name: Poller(name, hz[name], read) for name, read in readers.items()}
    load.start()
    time.sleep(5 * tick_s)  # reach the load's power before the first mark
    for p in pollers.values():
        p.start()
    time.sleep(2 * tick_s)
    marks: list[tuple[float, float]] = []
    meter_j: dict[str, list[float]] = {g: [] for g, _ in GRAINS}
    begin = time.monotonic()
    for i in range(TICKS + 1):
        target = begin + i * tick_s
        time.sleep(max(0.0, target - time.monotonic()))
        marks.append((time.monotonic(), counter_j(nvml, handle)))
        for grain, ticks in GRAINS:
            if i > 0 and i % ticks == 0:
                meter_j[grain].append(meter.end_window(grain, sync_execution=False).total_j)
            if i < TICKS and i % ticks == 0:
                meter.begin_window(grain, sync_execution=False)
    time.sleep(2 * tick_s)
    for p in pollers.values():
        p.stop.set()
    load.stop.set()
    load.join()
    for p in pollers.values():
        p.join()
    out: dict[str, Any] = {"products": load.products}
    for grain, ticks in GRAINS:
        rows = []
        for k, start in enumerate(range(0, TICKS, ticks)):
            (t0, c0), (t1, c1) = marks[start], marks[start + ticks]
            ref = c1 - c0
            row = {
                "t0": t0 - begin,
                "seconds": t1 - t0,
                "counter_j": ref,
                "meter_j": meter_j[grain][k],
            }
            for name, p in pollers.items():
                row[f"{name}_j"] = integrate(p.samples, t0, t1)
            rows.append(row)
        errors = {
            "meter": summary(
                [r["meter_j"] / r["counter_j"] - 1 for r in rows if r["counter_j"] > 0]
            )
        }
        for name in pollers:
            errors[name] = summary(
                [r[f"{name}_j"] / r["counter_j"] - 1 for r in rows if r["counter_j"] > 0]
            )
        out[grain] = {
            "windows": rows,
            "rel_error": errors,
            "mean_power_w": sum(r["counter_j"] for r in rows) / sum(r["seconds"] for r in rows),
        }
    return out


def main() -> None:
    part = Part("meter_vs_counter", __doc__.splitlines()[0], budget_s=70)
    part.parse()
    part.require_gpu()
    import torch

    from greenml.measure.meter import Meter
    from greenml.measure.sensors.nvml import NvmlSensor

    if part.smoke:
        torch.set_num_threads(1)
    tick_s = 0.01 if part.smoke else 0.1  # smoke: windows of 0.01, 0.1 and 1 s
    nvml = part.nvml()
    handle = first_handle(nvml)
    part.figures["environment"] = env = part.environment()
    print("environment:", env)
    sensor = NvmlSensor([0], nvml=nvml)
    meter = Meter(sensors=[sensor], sample_hz=1.0, sync_cuda=False)
    device = sensor.devices[0]
    part.figures["device"] = {
        "name": device.name,
        "method": device.method,
        "uncertainty_rel": device.uncertainty_rel,
    }

    # Update periods under a steady load.
    warm = Load(part.device)
    warm.start()
    time.sleep(20 * tick_s)
    probe_s = 1.0 if not part.smoke else 0.2
    periods = {
        "counter": update_period(lambda: counter_j(nvml, handle), probe_s),
        "power": update_period(lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0, probe_s),
    }
    instant = instant_power_reader(nvml, handle)
    if instant is not None:
        periods["instant power"] = update_period(instant, probe_s)
    warm.stop.set()
    warm.join()
    part.figures["update_period"] = periods
    part.table(
        "NVML update periods under a steady load",
        ["reading", "polls", "µs per call", "changes", "median period ms", "min ms", "max ms"],
        [
            [
                k,
                v["polls"],
                v["call_us"],
                v["changes"],
                v["period_ms_median"],
                v["period_ms_min"],
                v["period_ms_max"],
            ]
            for k, v in periods.items()
        ],
    )

    loads = {
        "steady": lambda: Load(part.device),
        "bursty": lambda: Load(part.device, on_s=1.5 * tick_s, off_s=2.5 * tick_s),
    }
    phase_s = (TICKS + 9) * tick_s + 3
    status = "ok"
    for name, make in loads.items():
        if part.left_s() < phase_s:
            print(f"{name}: skipped, {part.left_s():.0f} s left of the budget")
            part.figures[name] = {"skipped": "budget"}
            status = "partial"
            continue
        part.figures[name] = phase = run_phase(part, meter, nvml, handle, make(), tick_s)
        rows = []
        for grain, _ in GRAINS:
            g = phase[grain]
            for method, s in g["rel_error"].items():
                rows.append(
                    [
                        grain,
                        method,
                        s["n"],
                        pct(s["mean"]),
                        pct(s["mean_abs"]),
                        pct(s["max_abs"]),
                        g["mean_power_w"],
                    ]
                )
        part.checkpoint()
        part.table(
            f"{name} load: error against the NVML energy counter",
            [
                "window",
                "method",
                "windows",
                "mean error",
                "mean abs error",
                "max abs error",
                "mean W",
            ],
            rows,
        )
    meter.close()
    verdict = {}
    for name in loads:
        phase = part.figures.get(name, {})
        for grain in ("1 s", "10 s"):
            if grain in phase:
                worst = phase[grain]["rel_error"]["meter"]["max_abs"]
                verdict[f"{name} {grain}"] = worst is not None and worst <= 0.005
    part.figures["meter_within_0.5pct_for_windows_ge_1s"] = verdict
    print("meter within 0.5 % of the counter (windows >= 1 s):", verdict)
    part.finish(status)


if __name__ == "__main__":
    main()
