"""Forecast skill of greenml's seasonal forecaster on 16 grid zones, against naive peers.

For every zone in ``shared/data/carbon_intensity``: fit the forecaster on one
year, then forecast the other with a rolling origin (each day at 00:00 and
12:00 UTC, the next 48 h, from data before the origin only) and print

- MAPE over 1–48 h ahead and at 24 h ahead: greenml vs persistence (the last
  value held) vs the day-ago naive (the latest value at the same hour);
- the saving of a 4 h job placed in the next 24 h, against starting at the
  origin: by a perfect forecast (the true series), by greenml's forecast and
  by the day-ago naive, and the share of the perfect saving each keeps;
- how often the realised saving fell in the 90 % interval greenml states.

Both splits run: train 2022 → test 2023, and train 2023 → test 2022 (so the
method is not tuned to one year; every zone is fitted on its own training
year only, with the same fixed settings everywhere). A report: exit code 0.

Usage::

    python benchmarks/forecast_skill.py [--data DIR] [--zones DE-LU,GB]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "carbon_intensity"
HEAD = (
    f"{'zone':<12} {'split':<9} {'MAPE%':>6} {'pers':>6} {'day':>6} │ {'@24h':>5} {'pers':>5} "
    f"{'day':>5} │ {'perfect':>7} {'ours':>6} {'day':>6} │ {'kept':>5} {'day':>5} │ {'cover':>5}"
)


def load(path: Path) -> Any:
    from greenml.accounting.traces import load_trace

    return load_trace(path).series.values


def row(zone: str, split: str, s: Any) -> str:
    return (
        f"{zone:<12} {split:<9} {s.mape_pct:6.1f} {s.persistence_mape_pct:6.1f} "
        f"{s.day_ago_mape_pct:6.1f} │ {s.mape_24h_pct:5.1f} {s.persistence_mape_24h_pct:5.1f} "
        f"{s.day_ago_mape_24h_pct:5.1f} │ {s.perfect_saving_pct:6.1f}% "
        f"{s.forecast_saving_pct:5.1f}% {s.day_ago_saving_pct:5.1f}% │ "
        f"{s.kept_pct:4.0f}% {s.day_ago_kept_pct:4.0f}% │ {s.coverage_pct:4.0f}%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--zones", help="comma-separated zones (default: all in --data)")
    args = parser.parse_args()

    import numpy as np

    from greenml.schedule.forecast_skill import evaluate
    from greenml.schedule.seasonal import fit_seasonal

    clock = time.perf_counter()
    zones = sorted({p.name.rsplit("_", 2)[0] for p in args.data.glob("*_20??_hourly.csv")})
    if args.zones:
        zones = [z for z in zones if z in args.zones.split(",")]
    print("Forecast skill, rolling origin at 00:00 and 12:00 UTC, horizon 48 h;")
    print("job: 4 h contiguous, placed within the next 24 h; savings vs starting at the origin.")
    print("MAPE% over 1–48 h and @24h: greenml seasonal forecaster | persistence | day-ago naive")
    print("perfect/ours/day: pooled saving of each placement; kept: share of the perfect saving")
    print("cover: share of placements whose realised saving fell in greenml's stated 90 % interval")
    print()
    print(HEAD)
    results: dict[str, list[Any]] = {"2022→2023": [], "2023→2022": []}
    for zone in zones:
        a = load(args.data / f"{zone}_2022_hourly.csv")
        b = load(args.data / f"{zone}_2023_hourly.csv")
        forward = evaluate(fit_seasonal(a, 24), np.concatenate([a, b]), len(a))
        backward = evaluate(fit_seasonal(b, 24), a, 0)
        results["2022→2023"].append(forward)
        results["2023→2022"].append(backward)
        print(row(zone, "2022→2023", forward))
        print(row(zone, "2023→2022", backward))
    print()
    for split, skills in results.items():
        mean = {k: float(np.mean([getattr(s, k) for s in skills])) for k in skills[0].__dict__}
        beats = sum(s.mape_pct < min(s.persistence_mape_pct, s.day_ago_mape_pct) for s in skills)
        ours, pers, day = mean["mape_pct"], mean["persistence_mape_pct"], mean["day_ago_mape_pct"]
        print(
            f"{split}: mean MAPE {ours:.1f}% vs persistence {pers:.1f}% (ratio {ours / pers:.2f})"
            f" vs day-ago {day:.1f}% (ratio {ours / day:.2f}); "
            f"best of three on {beats}/{len(skills)} zones"
        )
        print(
            f"{split}: mean saving perfect {mean['perfect_saving_pct']:.1f}%, greenml "
            f"{mean['forecast_saving_pct']:.1f}%, day-ago {mean['day_ago_saving_pct']:.1f}%, "
            f"persistence {mean['persistence_saving_pct']:.1f}%; kept (mean of zones) greenml "
            f"{mean['kept_pct']:.0f}%, day-ago {mean['day_ago_kept_pct']:.0f}%; "
            f"interval coverage {mean['coverage_pct']:.0f}% (nominal 90%)"
        )
    print(f"\n{len(zones)} zones, both splits, in {time.perf_counter() - clock:.1f} s")


if __name__ == "__main__":
    main()
