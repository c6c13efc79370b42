"""Carbon-aware power capping on recorded grid traces: CO2 saved against the time it costs.

A V100 training job (ImageNet/ResNet-50 time and power per power limit, as
measured in the Zeus NSDI'23 traces, packaged as ``v100_power_curves.csv``)
starts every week of 2023 at midnight UTC and runs ``--hours`` uncapped. Each
start is run three ways by :class:`~greenml.optimize.dirty_cap.DirtyCapController`
on a simulated 5-minute tick, with the zone's recorded hourly intensity:

* **uncapped** — the highest limit throughout (the reference);
* **always capped** — the limit of least energy throughout (what the
  power-limit optimizer alone would keep): the peer;
* **cap when dirty** — that limit only while the intensity is above its median
  over the job's window, within a deadline of ``+slack`` over the uncapped time.

Printed per zone and slack: CO2 saved against uncapped (mean, and the mean of
the controller's stated uncertainty), the time it cost, and the grams saved per
hour of delay for both capping policies.

    python benchmarks/cap_when_dirty.py [--data ../shared/data/carbon_intensity] [--hours 8]
"""

from __future__ import annotations

import argparse
import csv
import io
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

from greenml.accounting.traces import load_trace
from greenml.optimize.dirty_cap import CapCurve, DirtyCapController, dirty_threshold
from greenml.optimize.objective import LimitProfile

ZONES = ("DE-LU", "GB", "US-CAL-CISO", "US-TEX-ERCO", "ZA", "CA-ON")
TICK_S = 300.0
DATA = next((p for p in (Path(__file__).resolve().parents[1].parent / "shared" / "data",
                         Path("/work/shared/data")) if p.exists()),
            Path("shared/data")) / "carbon_intensity"  # fmt: skip


class _Limiter:
    def set_all(self, limit_w: float) -> None:  # a simulated GPU: nothing to set
        pass


def v100_curve(dataset: str = "imagenet") -> CapCurve:
    text = (resources.files("greenml") / "data" / "v100_power_curves.csv").read_text()
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["dataset"] == dataset]
    profiles = tuple(LimitProfile(float(r["power_limit"]), float(r["time_per_epoch"]),
                                  float(r["time_per_epoch"]) * float(r["average_power"]))
                     for r in rows)  # fmt: skip
    return CapCurve(profiles, f"Zeus V100 power trace, {dataset}")


@dataclass
class Outcome:
    saved_g: float
    uncertainty_g: float
    uncapped_g: float
    delay_s: float


def simulate(curve: CapCurve, at: Callable[[float], float], start_s: float, job_s: float,
             threshold: float, slack_s: float | None) -> Outcome:  # fmt: skip
    """Run the job to the end of its work on a simulated tick."""
    c = DirtyCapController(_Limiter(), curve, at, threshold, start_s, slack_s)
    now = start_s
    while True:
        c.tick(now)
        if c.progress_s >= job_s:  # the work is done
            break
        now += TICK_S
    block = c.finish(now)
    return Outcome(block["co2_saved_g"], block["co2_saved_uncertainty_g"],
                   block["co2_uncapped_g"], block["time_cost_s"])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--hours", type=float, default=8.0)
    parser.add_argument("--year", default="2023")
    args = parser.parse_args()
    curve = v100_curve()
    job_s = args.hours * 3600.0
    slowdown = curve.capped.time_s / curve.uncapped.time_s - 1
    print(f"job: {args.hours:g} h uncapped on a V100 ({curve.source}); capped limit "
          f"{curve.capped.power_limit_w:g} W of {curve.uncapped.power_limit_w:g} W: "
          f"{(1 - curve.capped.energy_j / curve.uncapped.energy_j):.1%} less energy per step, "
          f"{slowdown:.1%} slower; 52 weekly starts of {args.year}, 5-minute ticks")
    print(f"{'zone':<13}{'slack':>6} | {'always capped':>22} | {'cap when dirty':>30}")
    print(f"{'':<13}{'':>6} | {'CO2 saved':>10} {'time':>6} {'g/h':>5}"
          f" | {'CO2 saved':>18} {'time':>6} {'g/h':>5}")  # fmt: skip
    started = time.perf_counter()
    year_start = datetime(int(args.year), 1, 1, tzinfo=timezone.utc).timestamp()
    for zone in ZONES:
        path = args.data / f"{zone}_{args.year}_hourly.csv"
        if not path.exists():
            print(f"{zone:<13} no trace at {path}")
            continue
        series = load_trace(path).series
        at = series.value_at
        for slack in (0.10, 0.25, None):
            always: list[Outcome] = []
            dirty: list[Outcome] = []
            for week in range(52):
                start = year_start + week * 7 * 86400.0
                window = start + job_s * (1 + (slack if slack is not None else 1.0))
                hourly = [at(start + h * 3600.0) for h in range(int((window - start) // 3600) + 1)]
                limit_s = job_s * slack if slack is not None else None
                always.append(simulate(curve, at, start, job_s, 0.0, None))
                dirty.append(simulate(curve, at, start, job_s, dirty_threshold(hourly), limit_s))
            print(f"{zone:<13}{_slack(slack):>6} | {_row(always, False)} | {_row(dirty, True)}")
    print(f"(simulated in {time.perf_counter() - started:.1f} s)")


def _slack(slack: float | None) -> str:
    return "none" if slack is None else f"{slack:.0%}"


def _row(outcomes: list[Outcome], with_u: bool) -> str:
    saved = sum(o.saved_g for o in outcomes) / sum(o.uncapped_g for o in outcomes)
    u = sum(o.uncertainty_g for o in outcomes) / sum(o.uncapped_g for o in outcomes)
    delay_h = sum(o.delay_s for o in outcomes) / len(outcomes) / 3600.0
    delay_s = max(1e-9, sum(o.delay_s for o in outcomes))
    grams_per_h = sum(o.saved_g for o in outcomes) / delay_s * 3600
    text = f"{saved:>6.1%} ± {u:.1%}" if with_u else f"{saved:>10.1%}"
    return f"{text} {delay_h * 60:>4.0f}m {grams_per_h:>5.0f}"


if __name__ == "__main__":
    main()
