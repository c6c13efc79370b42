"""Candidates from runs started in a zone's dirty hours, when a greener start was in reach.

For each run whose carbon block names a zone greenml ships a typical day for
(:mod:`greenml.schedule.profile`), the profile's mean intensity over the hours the
run took is compared with the best start within ``deadline_s`` of its own start (hour
steps, the same duration). The CO2eq share saved is ``1 − best ÷ actual``; the
uncertainty is the profile's stated floor error (a day's own hours differ from the
typical day) on both means, in quadrature.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from greenml.savings.candidate import Candidate
from greenml.savings.footprint import Footprint, co2_g

HOUR_S = 3600.0
MIN_SHARE = 0.05
"""A shift that saves under 5 % of a run's CO2eq is not proposed."""


def run_shift(record: Mapping[str, Any], deadline_s: float) -> tuple[str, float] | None:
    """The zone and the CO2eq share a better start would save, or ``None``."""
    import numpy as np

    from greenml.schedule.profile import has_profile, profile_values

    zone = (record.get("carbon") or {}).get("location")
    started = record.get("started_at")
    duration = float(record.get("duration_s") or 0.0)
    if not zone or not started or duration <= 0 or not has_profile(str(zone)):
        return None
    start = datetime.fromisoformat(str(started).replace("Z", "+00:00")).timestamp()
    steps = max(1, math.ceil(duration / HOUR_S))
    offsets = np.arange(0.0, max(deadline_s - duration, 0.0) + 1.0, HOUR_S)
    means = [float(np.mean(profile_values(str(zone), start + o + np.arange(steps) * HOUR_S)))
             for o in offsets]  # fmt: skip
    actual, best = means[0], min(means)
    if actual <= 0:
        return None
    return str(zone), 1.0 - best / actual


def from_hours(
    records: Sequence[Mapping[str, Any]], year: Footprint, deadline_s: float
) -> list[Candidate]:
    """One candidate per zone where runs could have started in greener hours."""
    from greenml.schedule.profile import SIGMA_INFLATION, SIGMA_LOG_FLOOR

    by_zone: dict[str, list[tuple[Mapping[str, Any], float, float]]] = {}
    for r in records:
        if r.get("status") != "completed" or r.get("schedule"):
            continue
        found, grams = run_shift(r, deadline_s), co2_g(r)
        if found is None or grams is None or found[1] < MIN_SHARE:
            continue
        by_zone.setdefault(found[0], []).append((r, found[1], grams))
    total_g = sum(g for r in records if (g := co2_g(r)) is not None)
    out = []
    for zone, runs in by_zone.items():
        saved = sum(share * grams for _, share, grams in runs)
        share = saved / total_g if total_g > 0 else 0.0
        mean_share = saved / sum(g for _, _, g in runs)
        rel = math.sqrt(2.0) * SIGMA_LOG_FLOOR * SIGMA_INFLATION * (1 - mean_share) / mean_share
        hours = deadline_s / HOUR_S
        out.append(Candidate(
            key=f"green-hours:{zone}",
            title=f"Start jobs in {zone}'s greener hours (deadline +{hours:g}h)",
            base="carbon", share=share, energy_j=0.0, co2_g=year.co2_g * share, usd=None,
            uncertainty_rel=rel,
            method=(f"estimated: {len(runs)} run(s) started in dirty hours; {zone}'s typical "
                    f"day (greenml.schedule.profile) gives {mean_share * 100:.0f} % less CO2eq "
                    f"for a start within {hours:g} h; × the yearly rate"),
            evidence_runs=tuple(str(r["id"]) for r, _, _ in runs),
            findings=("audit:carbon-aware",), effort="low",
            risk=f"time to result: up to {hours:g} h later (the deadline bounds it)",
            action="policy",
            settings={"when": "green", "deadline": f"+{hours:g}h", "location": zone,
                      "expected_saving_rel": mean_share},
        ))  # fmt: skip
    return out
