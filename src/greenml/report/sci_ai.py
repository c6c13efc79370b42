"""SCI for AI (Green Software Foundation): the provider's units beside the consumer's.

A model provider reports the carbon of building a model per unit of what was built:
per FLOP of training compute, per training token, per parameter. *Gross* counts every
run in the set (failed and interrupted experiments included); *effective* only the
runs that completed (the ones that produced a model), with the embodied share (M)
split in proportion to their operational carbon. Units not recorded (no FLOPs block
on every run, no ``-O training_tokens=`` or ``-O parameters=``) are reported as unknown.

Boundary: the runs' facility energy (PUE applied) at the recorded location-based grid
intensity, plus the embodied share when known; data preparation, serving and networks
outside the runs are not included.
"""

from __future__ import annotations

import math
from typing import Any

from greenml.errors import ConfigError
from greenml.report import sigfig as fmt
from greenml.report.model import Section, Table

BOUNDARY = ("the runs' facility energy (PUE applied) × location-based grid intensity, plus "
            "their embodied share when known; data preparation, serving and networks outside "
            "the runs are not included")  # fmt: skip


def provider_units(records: list[dict[str, Any]], total_g: float | None,
                   parameters: float | None, training_tokens: float | None
                   ) -> tuple[Section, dict[str, Any]]:  # fmt: skip
    """The provider-units section and its data (``sci_ai``) of a run set.

    Raises:
        ConfigError: ``parameters`` or ``training_tokens`` not a positive finite number.
    """
    for name, value in (("parameters", parameters), ("training_tokens", training_tokens)):
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise ConfigError(f"-O {name} must be a positive number, got {value}")
    carbon = [_number((r.get("carbon") or {}).get("kg")) for r in records]
    done = [r.get("status") == "completed" for r in records]
    all_g = sum(c for c in carbon if c is not None) * 1000
    done_g = sum(c for c, d in zip(carbon, done, strict=True) if c is not None and d) * 1000
    gross = total_g
    effective = total_g * done_g / all_g if total_g is not None and all_g > 0 else None
    flops = [_number((r.get("flops") or {}).get("flops")) for r in records]
    flops_gross = sum(f for f in flops if f is not None) if all(f is not None for f in flops) \
        else None  # fmt: skip
    flops_done = (sum(f for f, d in zip(flops, done, strict=True) if f is not None and d)
                  if flops_gross is not None else None)  # fmt: skip
    units = {
        "FLOP": (flops_gross, flops_done, "the runs' FLOPs blocks" if flops_gross is not None
                 else "unknown: not every run has a FLOPs count"),
        "training token": (training_tokens, training_tokens,
                           "given (-O training_tokens=)" if training_tokens else "not given"),
        "parameter": (parameters, parameters,
                      "given (-O parameters=)" if parameters else "not given"),
    }  # fmt: skip
    rows, data = [], {"boundary": BOUNDARY, "gross_g": gross, "effective_g": effective,
                      "runs": len(records), "completed_runs": sum(done), "units": {}}  # fmt: skip
    for unit, (n_gross, n_done, source) in units.items():
        g_per = gross / n_gross if gross is not None and n_gross else None
        e_per = effective / n_done if effective is not None and n_done else None
        data["units"][unit] = {"gross_g_per_unit": g_per, "effective_g_per_unit": e_per,
                               "count": n_gross, "source": source}  # fmt: skip
        rows.append([f"per {unit}", _g(g_per), _g(e_per), source])
    table = Table(["unit", "gross", "effective", "count from"], rows,
                  note=f"Boundary: {BOUNDARY}.")  # fmt: skip
    text = (f"Gross: all {len(records)} runs ({_g(gross)}); effective: the "
            f"{sum(done)} completed runs ({_g(effective)}).")
    return Section("SCI for AI: provider units", paragraphs=[text], tables=[table]), data


def _g(grams: float | None) -> str:
    return "unknown" if grams is None else f"{fmt.scientific(grams, 3)} g CO2eq"


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None
