"""Practice findings: a dirtier grid than needed, FP32 on a BF16 GPU, a GPU kept on.

- location: the run's carbon block intensity against each ``candidates`` entry
  (a grid zone, cloud region or country, from the static tables); reported when the
  cleanest is at least ``CLEANER_BY`` lower.
- precision: tag ``precision=fp32`` or ``dtype=float32`` on a GPU that has
  BF16; assumes mixed precision halves the compute-bound share of GPU energy
  (GPU energy × mean activity × 0.5), a conservative figure.
- duty cycle: at least ``MIN_RUNS`` runs of the same name spanning at least a
  day that keep the GPU busy under ``MAX_DUTY`` of that span; if the machine
  stays on between runs, idle power (the lowest power sampled in this run) is
  spent for the rest of each day.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from greenml.accounting.static import cloud_region_source, country_source, zone_source
from greenml.diagnose.findings import Finding
from greenml.errors import ConfigError
from greenml.hardware.gpu import gpu_spec
from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

CLEANER_BY = 0.20
MIN_RUNS = 3
MAX_DUTY = 0.5
DAY_S = 86_400.0


def candidate_intensity(candidate: str) -> float:
    """Yearly intensity (g/kWh) of a grid zone, cloud region or country.

    Raises:
        ConfigError: Neither a known zone nor a known region.
    """
    for lookup in (zone_source, cloud_region_source, country_source):
        try:
            return _value(lookup(candidate))
        except ConfigError:
            continue
    raise ConfigError(f"candidate {candidate!r} is not a known grid zone, cloud region or country")


def _value(source: Any) -> float:
    return float(source.intensity(0.0, 1.0).series.mean(0.0, 1.0))


def location_finding(record: dict[str, Any], candidates: list[str]) -> Finding | None:
    """A cleaner candidate location, or ``None``."""
    carbon = record.get("carbon") or {}
    if not candidates or carbon.get("status") != "ok":
        return None
    here = float(carbon["intensity_g_per_kwh"])
    ranked = sorted((candidate_intensity(c), c) for c in candidates)
    best_ci, best = ranked[0]
    if best_ci > here * (1 - CLEANER_BY):
        return None
    facility_kwh = float(carbon.get("facility_energy_kwh") or 0.0)
    saved_g = facility_kwh * (here - best_ci)
    return Finding(
        kind="location",
        severity="high" if best_ci < here * 0.5 else "medium",
        title=f"{best} is {1 - best_ci / here:.0%} cleaner than where this ran",
        evidence=(
            f"this run's grid: {here:.0f} g/kWh ({carbon.get('source', '?')}); {best}: "
            f"{best_ci:.0f} g/kWh (yearly average); {facility_kwh:.3g} kWh facility energy"
        ),
        recommendation=f"run it in {best} (same energy, {saved_g / 1000:.3g} kg CO2eq less)",
        co2_g_at_stake=saved_g,
        figures={"intensity_g_per_kwh": here, "candidate": best, "candidate_g_per_kwh": best_ci},
    )


def precision_finding(
    record: dict[str, Any], gpu_name: str | None, gpu_energy_j: float, mean_activity: float
) -> Finding | None:
    """FP32 training on a GPU with BF16, or ``None``."""
    tags = record.get("tags") or {}
    if tags.get("precision", "").lower() != "fp32" and tags.get("dtype", "").lower() != "float32":
        return None
    if gpu_name is None:
        return None
    try:
        spec = gpu_spec(gpu_name)
    except ConfigError:
        return None
    if not spec.bf16_supported:
        return None
    fp32 = spec.tf32_tflops or spec.fp32_tflops or 0.0
    bf16 = spec.bf16_tflops or 0.0
    stake = gpu_energy_j * mean_activity * 0.5
    return Finding(
        kind="precision",
        severity="medium",
        title=f"FP32 training on {spec.name}, which computes in BF16",
        evidence=(
            f"tags say FP32; {spec.name} peaks at {bf16:g} BF16 vs {fp32:g} TF32/FP32 TFLOPS. "
            "Assumes mixed precision halves the compute-bound share of GPU energy "
            f"({mean_activity:.0%} mean activity)"
        ),
        recommendation="train in BF16 mixed precision (torch.autocast(dtype=torch.bfloat16))",
        energy_at_stake_j=stake,
        figures={"bf16_tflops": bf16, "fp32_tflops": fp32},
    )


def duty_cycle_finding(
    record: dict[str, Any], runs: list[dict[str, Any]], idle_w: float, usd_per_kwh: float | None
) -> Finding | None:
    """Runs of one name that use the GPU a few hours a day, or ``None``."""
    done = [r for r in runs if r.get("started_at") and r.get("duration_s")]
    if len(done) < MIN_RUNS or idle_w <= 0:
        return None
    starts = [datetime.fromisoformat(r["started_at"]).timestamp() for r in done]
    ends = [s + float(r["duration_s"]) for s, r in zip(starts, done, strict=True)]
    span = max(ends) - min(starts)
    busy = sum(float(r["duration_s"]) for r in done)
    if span < DAY_S or busy / span >= MAX_DUTY:
        return None
    idle_s_per_day = DAY_S * (1 - busy / span)
    per_run_j = idle_w * (span - busy) / len(done)
    per_year_j = idle_w * idle_s_per_day * 365
    return Finding(
        kind="duty-cycle",
        severity="medium",
        title=f"the GPU does {busy / span * 24:.1f} h of work a day",
        evidence=(
            f"{len(done)} runs named {record.get('name')!r} over {span / DAY_S:.1f} days kept "
            f"the GPU busy {busy / span:.0%} of the time; if it stays on between runs it idles "
            f"{idle_s_per_day / 3600:.1f} h a day at about {idle_w:.0f} W (lowest power sampled)"
        ),
        recommendation="power the machine down between runs, or batch the runs and share the GPU",
        energy_at_stake_j=per_run_j,
        energy_per_year_j=per_year_j,
        usd_per_year=None if usd_per_kwh is None else per_year_j / JOULES_PER_KWH * usd_per_kwh,
        figures={"runs": len(done), "span_s": span, "busy_s": busy, "idle_w": idle_w},
    )
