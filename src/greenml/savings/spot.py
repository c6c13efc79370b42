"""Spot capacity for long on-demand jobs, priced from a table the user may give.

The audit (:mod:`greenml.advise.audit`) flags long jobs not on spot with checkpoints and
prices them from the packaged list; here the same jobs are priced from the user's table
or provider export first (``--instance-prices``), each price with its source and date,
so that the saving is not overstated by an old on-demand price. Only the money changes:
spot capacity is the same hardware.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from greenml.advise.audit import LONG_JOB_S
from greenml.errors import ConfigError
from greenml.savings.candidate import Candidate
from greenml.savings.footprint import Footprint

CHECKPOINT_INTERVAL_S = 1800.0


def from_spot(
    records: Sequence[Mapping[str, Any]], year: Footprint, table: Path | None
) -> list[Candidate]:
    """One ``spot`` candidate for the long on-demand jobs whose instance has a spot price."""
    from greenml.accounting.instances import instance_price

    saved, runs, sources = 0.0, [], set()
    total = sum(float((r.get("cost") or {}).get("usd") or 0.0) for r in records)
    for r in records:
        block = (r.get("cost") or {}).get("instance") or {}
        hours, name = block.get("hours"), block.get("instance_type")
        if (float(r.get("duration_s") or 0.0) < LONG_JOB_S or block.get("pricing") == "spot"
                or not isinstance(hours, (int, float)) or not name):  # fmt: skip
            continue
        try:
            price = instance_price(str(name), provider=block.get("provider"), table=table)
        except ConfigError:
            continue
        if price.spot_usd_per_h is None or price.on_demand_usd_per_h is None:
            continue
        saved += hours * (price.on_demand_usd_per_h - price.spot_usd_per_h)
        runs.append(str(r["id"]))
        sources.add(f"{price.instance_type}: on-demand {price.source} ({price.date}), spot "
                    f"{price.spot_source or price.source} ({price.spot_date or price.date})")
    if not runs or saved <= 0 or total <= 0:
        return []
    share = min(1.0, saved / total)
    return [Candidate(
        key="spot", title="Spot capacity with checkpoints for long jobs", base="cost",
        share=share, energy_j=0.0, co2_g=0.0,
        usd=None if year.usd is None else year.usd * share,
        uncertainty_rel=0.3,
        method=("estimated: instance hours × (on-demand − spot price) of "
                f"{len(runs)} long job(s); prices: {'; '.join(sorted(sources))}; interruptions "
                "and restarts not counted (±30 %: spot prices move by the hour)"),
        evidence_runs=tuple(runs), findings=("audit:spot-checkpointing",), effort="medium",
        risk="time to result: interruptions cost the work since the last checkpoint",
        action="policy",
        settings={"spot": True, "checkpoint_interval_s": CHECKPOINT_INTERVAL_S},
    )]  # fmt: skip
