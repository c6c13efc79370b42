"""Rightsizing: a cheaper or more efficient GPU that fits what the run used.

Assumptions (stated in every finding):

- the job needs the throughput it got: peak TFLOPS at its precision × mean
  activity; a candidate must deliver it at no more than ``MAX_ACTIVITY`` of its
  own peak, so the run takes as long as before;
- it must hold the peak memory used plus ``MEMORY_MARGIN``;
- a GPU draws ``IDLE_SHARE`` of its TDP idle, rising linearly to TDP at full
  activity; the expected change is the measured energy × (candidate model ÷
  current model);
- hourly prices come from the instance table for one-GPU-equivalent shares of
  the instances in ``INSTANCES`` (instance price ÷ GPUs in it).
"""

from __future__ import annotations

from typing import Any

from greenml.accounting.instances import instance_price
from greenml.diagnose.findings import Finding
from greenml.errors import ConfigError
from greenml.hardware.gpu import GpuSpec, gpu_spec, gpu_specs

MEMORY_MARGIN = 0.20
MAX_ACTIVITY = 0.90
IDLE_SHARE = 0.25
MIN_SAVING = 0.10
_GB = 1e9

INSTANCES: dict[str, tuple[str, int]] = {
    "T4": ("aws:g4dn.xlarge", 1),
    "A10G": ("aws:g5.xlarge", 1),
    "L4": ("aws:g6.xlarge", 1),
    "L40S": ("aws:g6e.xlarge", 1),
    "V100 SXM2 16GB": ("aws:p3.2xlarge", 1),
    "A100 SXM4 40GB": ("gcp:a2-highgpu-1g", 1),
    "A100 PCIe 80GB": ("azure:Standard_NC24ads_A100_v4", 1),
    "H100 SXM": ("aws:p5.48xlarge", 8),
}
"""GPU → (instance, GPUs in it) used for a price per GPU-hour."""


def gpu_name(record: dict[str, Any], device: str) -> str | None:
    """The device's model from the energy block, the environment, or a ``gpu`` tag."""
    devices = (((record.get("energy") or {}).get("components") or {}).get("gpu") or {}).get(
        "devices"
    ) or {}
    name = (devices.get(device) or {}).get("name")
    if name:
        return str(name)
    gpus = ((record.get("environment") or {}).get("gpu") or {}).get("gpus") or []
    index = int(device[3:]) if device[3:].isdigit() else -1
    if 0 <= index < len(gpus) and gpus[index].get("name"):
        return str(gpus[index]["name"])
    tag = (record.get("tags") or {}).get("gpu")
    return str(tag) if tag else None


def precision_of(record: dict[str, Any], spec: GpuSpec) -> str:
    """The run's precision from ``precision=``/``dtype=`` tags; else bf16 (fp16 without it)."""
    tags = record.get("tags") or {}
    raw = str(tags.get("precision") or tags.get("dtype") or "").lower()
    aliases = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
    raw = aliases.get(raw, raw)
    if raw in ("fp32", "tf32", "fp16", "bf16", "int8"):
        return raw
    return "bf16" if spec.bf16_supported else "fp16"


def hourly_usd(spec: GpuSpec) -> float | None:
    """Price per GPU-hour from the instance table, ``None`` when not mapped."""
    entry = INSTANCES.get(spec.name)
    if entry is None:
        return None
    try:
        return instance_price(entry[0]).usd_per_h / entry[1]
    except ConfigError:
        return None


def _power_model(spec: GpuSpec, activity: float) -> float:
    tdp = spec.tdp_w or 0.0
    return tdp * (IDLE_SHARE + (1 - IDLE_SHARE) * min(activity, 1.0))


def _peak(spec: GpuSpec, precision: str) -> float | None:
    try:
        return spec.peak_tflops(precision)
    except ConfigError:
        return None


def rightsizing_finding(
    *,
    name: str,
    n_gpus: int,
    peak_memory_bytes: float,
    mean_activity: float,
    energy_j: float,
    duration_s: float,
    precision: str,
    usd_per_kwh: float | None,
) -> Finding | None:
    """The best candidate GPU, if one saves at least ``MIN_SAVING`` of the energy."""
    try:
        current = gpu_spec(name)
    except ConfigError:
        return None
    cur_peak = _peak(current, precision)
    if cur_peak is None or not current.tdp_w or energy_j <= 0:
        return None
    need_tflops = cur_peak * mean_activity
    need_gb = peak_memory_bytes / _GB * (1 + MEMORY_MARGIN)
    cur_model = _power_model(current, mean_activity)
    best: tuple[float, GpuSpec, float] | None = None
    for spec in gpu_specs():
        peak = _peak(spec, precision)
        if spec is current or spec.vendor != current.vendor or not spec.tdp_w or not peak:
            continue
        activity = need_tflops / peak
        if spec.memory_gb < need_gb or activity > MAX_ACTIVITY:
            continue
        ratio = _power_model(spec, activity) / cur_model
        if best is None or ratio < best[0]:
            best = (ratio, spec, activity)
    if best is None or best[0] > 1 - MIN_SAVING:
        return None
    ratio, spec, activity = best
    saved_j = energy_j * (1 - ratio)
    usd = None if usd_per_kwh is None else saved_j / 3.6e6 * usd_per_kwh
    price_cur, price_new = hourly_usd(current), hourly_usd(spec)
    rent_note = ""
    if price_cur is not None and price_new is not None:
        rent = (price_cur - price_new) * n_gpus * duration_s / 3600.0
        usd = (usd or 0.0) + rent
        rent_note = (
            f"; rental ${price_cur:.2f} → ${price_new:.2f} per GPU-hour "
            f"({INSTANCES[current.name][0]} → {INSTANCES[spec.name][0]})"
        )
    return Finding(
        kind="rightsizing",
        severity="high" if ratio < 0.5 else "medium",
        title=f"{current.name} → {spec.name}: about {1 - ratio:.0%} less energy",
        evidence=(
            f"{n_gpus}× {current.name} ({current.memory_gb:.0f} GB, {cur_peak:g} {precision} "
            f"TFLOPS) used at most {peak_memory_bytes / _GB:.1f} GB at {mean_activity:.0%} mean "
            f"activity; {spec.name} ({spec.memory_gb:.0f} GB, {spec.tdp_w:.0f} W) fits it at "
            f"{activity:.0%} activity. Assumes throughput = {precision} peak TFLOPS × activity, "
            f"power = TDP × ({IDLE_SHARE:.0%} + {1 - IDLE_SHARE:.0%} × activity), same run time, "
            f"{MEMORY_MARGIN:.0%} memory margin{rent_note}"
        ),
        recommendation=f"run this job on {spec.name} (or share the {current.name}: MIG, MPS)",
        energy_at_stake_j=saved_j,
        usd_at_stake=usd,
        figures={
            "current": current.name,
            "candidate": spec.name,
            "energy_ratio": ratio,
            "candidate_activity": activity,
            "peak_memory_bytes": peak_memory_bytes,
            "mean_activity": mean_activity,
            "precision": precision,
            "tflops_per_w_current": cur_peak / current.tdp_w,
            "tflops_per_w_candidate": (_peak(spec, precision) or 0.0) / (spec.tdp_w or 1.0),
            "usd_per_gpu_h_current": price_cur,
            "usd_per_gpu_h_candidate": price_new,
        },
    )
