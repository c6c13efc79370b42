"""The estimator's inputs resolved into values, each recorded with its source.

:class:`Steps` collects the assumptions (name → value and source) and the
formula lines of one estimate; the ``resolve_*`` helpers turn what the caller
gave (a GPU name, a PUE or provider, an intensity or a source) into figures.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.accounting.intensity import ConstantSource
from greenml.accounting.pue import Pue, pue_for
from greenml.errors import ConfigError
from greenml.hardware.gpu import GpuSpec, gpu_spec, normalize_precision
from greenml.quantities import J_PER_KWH

if TYPE_CHECKING:
    from greenml.accounting.intensity import IntensitySource
    from greenml.accounting.pue import Pue
    from greenml.hardware.gpu import GpuSpec

_NO_INTENSITY = (
    "carbon unknown: no carbon intensity given; give ci (gCO2eq/kWh) or a location "
    "(--region, --zone or --country) to look one up"
)


class Steps:
    """Assumptions and formula lines of one estimate, in the order they were made."""

    def __init__(self) -> None:
        self.assumptions: dict[str, dict[str, Any]] = {}
        self.lines: list[str] = []

    def add(self, name: str, value: Any, source: str) -> None:
        """Record an input or default and where it comes from."""
        self.assumptions[name] = {"value": value, "source": source}

    def line(self, text: str) -> None:
        """Append one step of the formula."""
        self.lines.append(text)

    def compute_hours(
        self, spec: GpuSpec, flops: float, precision: str | None, mfu: float | None
    ) -> float:
        """Device-hours to run ``flops`` at ``mfu`` of the device's peak at ``precision``."""
        bf16_only = precision is None and "fp16" not in spec.precisions() and (
            "bf16" in spec.precisions())  # fmt: skip
        key = normalize_precision(precision or ("bf16" if bf16_only else "fp16"))
        peak = spec.peak_tflops(key)
        default = ("default: bf16 (the device has no fp16 peak, e.g. a TPU)" if bf16_only
                   else "default: fp16 (dense tensor peak, FP32 accumulate)")  # fmt: skip
        self.add("precision", key, "given" if precision else default)
        kind = "2:4-sparse vendor figure" if key == "fp16_sparse" else "dense peak"
        self.add("peak_tflops", peak, f"gpus.csv: {spec.name} {key} {kind}")
        if mfu is None:
            used = 1.0
            self.add("mfu", used, "default: 1.0 = peak throughput (a lower bound on time)")
        else:
            if not (math.isfinite(mfu) and 0.0 < mfu <= 1.0):
                raise ConfigError(f"mfu must be in (0, 1], got {mfu}")
            used = float(mfu)
            self.add("mfu", used, "given")
        hours = flops / (peak * 1e12 * used) / 3600.0
        self.line(
            f"device-hours = {flops:.3g} FLOP ÷ ({num(peak)} TFLOP/s {key} × MFU {used:g})"
            f" ÷ 3600 s/h = {num(hours)} h"
        )
        return hours

    def power(self, spec: GpuSpec, power_w: float | None, utilization: float | None) -> float:
        """Average watts per device: the given ``power_w``, else TDP × utilization."""
        if power_w is not None:
            if utilization is not None:
                raise ConfigError("give power_w or utilization, not both")
            if not (math.isfinite(power_w) and power_w > 0):
                raise ConfigError(f"power_w must be a positive number of watts, got {power_w}")
            self.add("power_w", float(power_w), "given: average power per device")
            return float(power_w)
        if spec.tdp_w is None:
            raise ConfigError(
                f"{spec.name} has no published TDP in the GPU table; give power_w "
                "(average watts per device)"
            )
        if utilization is None:
            used = 1.0
            self.add("utilization", used, "default: 1.0 = the device draws its TDP throughout")
        else:
            if not (math.isfinite(utilization) and 0.0 < utilization <= 1.0):
                raise ConfigError(f"utilization must be in (0, 1], got {utilization}")
            used = float(utilization)
            self.add("utilization", used, "given: share of TDP drawn on average")
        watts = spec.tdp_w * used
        self.add("power_w", watts, f"TDP {spec.tdp_w:g} W (gpus.csv) × utilization {used:g}")
        return watts


def resolve_device(gpu: str | GpuSpec, steps: Steps) -> GpuSpec:
    """The table row for ``gpu``, recorded with how it matched."""
    if isinstance(gpu, GpuSpec):
        spec, how = gpu, "given as a spec"
    else:
        spec = gpu_spec(gpu)
        how = f"gpus.csv row matched from {gpu!r}"
    steps.add("gpu", spec.name, f"{how}; {spec.source}")
    return spec


def resolve_pue(pue: float | str | None, steps: Steps) -> Pue:
    """The PUE from a number, a provider name (``accounting.pue.pue_for``), or 1.0."""
    if pue is None:
        used = Pue(1.0, "default: 1.0, no facility overhead counted (IT energy only); give pue")
    elif isinstance(pue, str):
        used = pue_for(provider=pue)
    elif isinstance(pue, bool) or not isinstance(pue, (int, float)):
        raise ConfigError(f"pue must be a number or a provider name, got {pue!r}")
    else:
        used = pue_for(value=float(pue))
    steps.add("pue", used.value, used.source)
    return used


def resolve_intensity(
    ci: float | IntensitySource | None, description: str | None, at: datetime
) -> tuple[float | None, str]:
    """Carbon intensity (gCO2eq/kWh) and its source; ``(None, why)`` when unknown.

    A source is asked for the hour around ``at`` and its value at ``at`` is
    held constant over the job (an estimate has no timeline).
    """
    note = f" ({description})" if description else ""
    if ci is None:
        return None, (description or _NO_INTENSITY)
    if isinstance(ci, bool):
        raise ConfigError(f"ci must be gCO2eq/kWh or an intensity source, got {ci!r}")
    if isinstance(ci, (int, float)):
        value = ConstantSource.user(float(ci)).intensity(0.0, 0.0).series.value_at(0.0)
        return value, f"given by the user{note}"
    if not hasattr(ci, "intensity"):
        raise ConfigError(f"ci must be gCO2eq/kWh or an intensity source, got {ci!r}")
    if at.tzinfo is None:
        raise ConfigError("at must be a timezone-aware datetime")
    mid = at.timestamp()
    when = at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        grid = ci.intensity(mid - 1800.0, mid + 1800.0)
        value = grid.series.value_at(mid)
    except ConfigError as exc:
        raise ConfigError(f"carbon intensity{note} at {when}: {exc}; give ci instead") from exc
    prov = grid.provenance
    text = "given by the user" if prov.resolution == "user" else prov.describe()
    if not math.isinf(grid.series.last_step_s):  # a time series, not one constant
        text += f", value at {when} held constant over the job"
    return value, f"{text}{note}"


def num(x: float, digits: int = 4) -> str:
    """``x`` with thousands separators and about ``digits`` significant digits."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1e9 or abs(x) < 1e-3:
        return f"{x:.{digits - 1}e}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def energy_text(joules: float) -> str:
    """Joules as kWh or MWh."""
    kwh = joules / J_PER_KWH
    return f"{num(kwh / 1000)} MWh" if kwh >= 1000 else f"{num(kwh)} kWh"


def mass_text(grams: float) -> str:
    """Grams CO2eq as g, kg or t."""
    if grams >= 1e6:
        return f"{num(grams / 1e6)} t"
    return f"{num(grams / 1e3)} kg" if grams >= 1e3 else f"{num(grams)} g"
