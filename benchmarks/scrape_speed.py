"""Scrape speed of ``greenml exporter`` with 8 fake GPUs and a CPU.

Median of 200 scrapes over HTTP on loopback, and of the collector alone
(``generate_latest`` of the registry, no HTTP); target: a scrape <= 5 ms.
Run: ``.venv/bin/python benchmarks/scrape_speed.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client import generate_latest
from tests.exporter.conftest import make_fake_meter

from greenml.accounting.intensity import ConstantSource
from greenml.exporter import Exporter

TARGET_MS = 5.0
N = 200


def median_ms(fn: object, n: int = N) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    meter = make_fake_meter()
    exp = Exporter(meter, intensity=ConstantSource.user(350.0), price_usd_per_kwh=0.2, job="b")
    port = exp.serve("127.0.0.1", 0)
    url = f"http://127.0.0.1:{port}/metrics"
    try:
        exp.step()
        urllib.request.urlopen(url).read()  # warm up

        def scrape() -> None:
            with urllib.request.urlopen(url) as response:
                response.read()

        http_ms = median_ms(scrape)
        collector_ms = median_ms(lambda: generate_latest(exp.registry))
        step_ms = median_ms(exp.step, 50)
    finally:
        exp.close()
        meter.close()
    ok = http_ms <= TARGET_MS
    print(f"scrape over HTTP, 8 GPUs + CPU: median {http_ms:.3f} ms (target <= {TARGET_MS} ms)")
    print(
        f"collector alone (generate_latest): median {collector_ms:.3f} ms "
        f"({collector_ms / http_ms:.0%} of a scrape)"
    )
    print(f"sampling tick (sensor read + state update, not per scrape): median {step_ms:.3f} ms")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
