"""Carbon of a run: facility energy in each intensity step × that step's intensity.

Emissions are time-weighted: a run that used all its energy in a clean hour is
charged that hour's intensity, not the day's mean. The energy total is the
measured one (counters where available); the power timeline gives only its
time profile (:mod:`greenml.accounting.profile`). Facility energy is IT
energy × PUE.

Uncertainty
-----------
The relative uncertainty combines, in quadrature, the energy's own and the
intensity's (independent sources):

- time-resolved intensity (``hourly``, ``sub-hourly``, ``live``): ±10 %, a
  judgement: the values are themselves partly estimated (Electricity Maps
  flags estimated hours) and per-fuel emission factors carry their own spread;
- an average applied to a run (``yearly``, ``monthly``, or a figure the user
  gave, which is treated as an average): the gap between the run's real
  intensity and the average. Measured on the Electricity Maps 2023 hourly data
  of 16 zones (Electricity Maps' free hourly exports, LCA values), the RMS relative
  gap between a window's mean intensity and the yearly mean is, at the median
  zone, 21.5 % for a 1-hour window, 11.8 % for a day, 8.9 % for a week and
  7.7 % for 30 days (75th percentile: 31, 25, 23, 17 %). greenml uses ±25 %
  up to an hour, ±15 % at a day and ±10 % from a week on, log-interpolated
  in between. The PUE is taken as exact (a user figure or a fleet average).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from greenml.accounting.intensity import GridIntensity
from greenml.accounting.profile import EVEN_SPREAD_NOTE, energy_profile
from greenml.accounting.pue import Pue
from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

TIME_RESOLVED_UNCERTAINTY_REL = 0.10
"""Uncertainty of hourly or finer intensity data (see the module docstring)."""

AVERAGE_UNCERTAINTY_REL: tuple[tuple[float, float], ...] = (
    (3600.0, 0.25),
    (86_400.0, 0.15),
    (7 * 86_400.0, 0.10),
)
"""(run duration in seconds, relative uncertainty) of an average intensity."""

_TIME_RESOLVED = frozenset({"hourly", "sub-hourly", "live"})

INTENSITY_SERIES_MAX_POINTS = 10_000
"""Most points of ``Carbon.intensity_series`` (a year of hourly data fits)."""


@dataclass(frozen=True)
class Carbon:
    """The carbon of a run, with where each factor comes from.

    Attributes:
        kg: Emissions in kg CO2eq.
        intensity_g_per_kwh: Effective intensity: grams ÷ facility kWh.
        source: The intensity's provenance in one line.
        pue: PUE applied.
        pue_source: Where the PUE comes from.
        it_energy_j: Measured IT energy.
        facility_energy_j: IT energy × PUE.
        method: How intensity and energy were combined.
        uncertainty_rel: Relative uncertainty of ``kg``.
        intensity_uncertainty_rel: The intensity's share of it.
        kind: ``average`` or ``marginal`` intensity.
        scope: ``direct`` or ``lifecycle`` emissions.
        resolution: Time resolution of the intensity data.
        intensity_series: ``(unix_s, g_per_kwh)`` steps in force during the run,
            for time-varying sources only (traces, APIs): each value holds until
            the next time; the last point repeats the last value at the run's end.
            At most ``INTENSITY_SERIES_MAX_POINTS`` (evenly thinned beyond).
    """

    kg: float
    intensity_g_per_kwh: float
    source: str
    pue: float
    pue_source: str
    it_energy_j: float
    facility_energy_j: float
    method: str
    uncertainty_rel: float
    intensity_uncertainty_rel: float
    kind: str
    scope: str
    resolution: str
    intensity_series: tuple[tuple[float, float], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``carbon`` block of a run record (kWh and kg at this edge)."""
        block: dict[str, Any] = {
            "status": "ok",
            "kg": self.kg,
            "intensity_g_per_kwh": self.intensity_g_per_kwh,
            "source": self.source,
            "kind": self.kind,
            "scope": self.scope,
            "resolution": self.resolution,
            "pue": self.pue,
            "pue_source": self.pue_source,
            "it_energy_kwh": self.it_energy_j / JOULES_PER_KWH,
            "facility_energy_kwh": self.facility_energy_j / JOULES_PER_KWH,
            "method": self.method,
            "uncertainty_rel": self.uncertainty_rel,
            "intensity_uncertainty_rel": self.intensity_uncertainty_rel,
        }
        if self.intensity_series is not None:
            block["intensity_series"] = [[t, v] for t, v in self.intensity_series]
        return block


def carbon_of(
    times_s: Any,
    power_w: Any,
    measured_it_energy_j: float,
    intensity: GridIntensity,
    pue: Pue,
    *,
    start_s: float | None = None,
    end_s: float | None = None,
    energy_uncertainty_rel: float = 0.0,
) -> Carbon:
    """Time-weighted carbon of a run.

    Args:
        times_s: Times of the run's total power timeline (Unix seconds); may be empty.
        power_w: Total power at those times (watts, summed over devices).
        measured_it_energy_j: The run's measured IT energy; the timeline is
            scaled to it and gives only the time profile.
        intensity: Grid intensity (g/kWh) covering the run.
        pue: Facility overhead.
        start_s: Run start; with ``end_s``, the span to spread the energy over
            when there is no timeline.
        end_s: Run end.
        energy_uncertainty_rel: Relative uncertainty of the measured energy.

    Raises:
        ConfigError: The intensity does not cover the run.
    """
    profile = energy_profile(times_s, power_w, measured_it_energy_j, start_s=start_s, end_s=end_s)
    facility_j = pue.facility_j(profile.total_j)
    facility_kwh = facility_j / JOULES_PER_KWH
    grams = profile.weighted(intensity.series, scale=pue.value / JOULES_PER_KWH)
    t0, t1 = float(profile.times_s[0]), float(profile.times_s[-1])
    effective = grams / facility_kwh if facility_kwh > 0 else intensity.series.mean(t0, t1)
    prov = intensity.provenance
    method = _method(intensity)
    if profile.evenly and facility_kwh > 0:
        method += f"; {EVEN_SPREAD_NOTE}"
    intensity_rel = intensity_uncertainty(prov.resolution, profile.duration_s)
    return Carbon(
        kg=grams / 1000.0,
        intensity_g_per_kwh=effective,
        source=prov.describe(),
        pue=pue.value,
        pue_source=pue.source,
        it_energy_j=profile.total_j,
        facility_energy_j=facility_j,
        method=method,
        uncertainty_rel=math.hypot(energy_uncertainty_rel, intensity_rel),
        intensity_uncertainty_rel=intensity_rel,
        kind=prov.kind,
        scope=prov.scope,
        resolution=prov.resolution,
        intensity_series=None if _is_constant(intensity) else intensity_steps(intensity, t0, t1),
    )


def naive_carbon_kg(
    measured_it_energy_j: float, intensity: GridIntensity, pue: Pue, start_s: float, end_s: float
) -> float:
    """Mean intensity over the run × total energy: the figure time-weighting corrects."""
    mean = intensity.series.mean(start_s, end_s)
    return pue.facility_j(measured_it_energy_j) / JOULES_PER_KWH * mean / 1000.0


def intensity_uncertainty(resolution: str, duration_s: float) -> float:
    """Relative uncertainty of an intensity of this resolution over a run this long."""
    if resolution in _TIME_RESOLVED:
        return TIME_RESOLVED_UNCERTAINTY_REL
    table = AVERAGE_UNCERTAINTY_REL
    if duration_s <= table[0][0]:
        return table[0][1]
    for (d0, u0), (d1, u1) in itertools.pairwise(table):
        if duration_s <= d1:
            share = math.log(duration_s / d0) / math.log(d1 / d0)
            return u0 + (u1 - u0) * share
    return table[-1][1]


def intensity_steps(
    intensity: GridIntensity, start_s: float, end_s: float, max_points: int = 0
) -> tuple[tuple[float, float], ...]:
    """The intensity steps in force over [start_s, end_s], for plotting.

    The first point is the value at ``start_s``, then each step that begins
    inside the span, then the last value again at ``end_s`` (so a line covers
    the whole run). Beyond ``max_points`` (default
    ``INTENSITY_SERIES_MAX_POINTS``) every k-th step is kept, plus both ends.

    Raises:
        ConfigError: The series does not cover ``start_s``.
    """
    series = intensity.series
    cap = max(max_points or INTENSITY_SERIES_MAX_POINTS, 3)
    inside = (series.times_s > start_s) & (series.times_s < end_s)
    times = [float(t) for t in series.times_s[inside]]
    values = [float(v) for v in series.values[inside]]
    points = [(start_s, series.value_at(start_s)), *zip(times, values, strict=True)]
    if len(points) + 1 > cap:
        stride = math.ceil((len(points) - 1) / (cap - 2))
        points = [points[0], *points[1::stride]][: cap - 1]
    if end_s > start_s:
        points.append((end_s, values[-1] if values else points[0][1]))
    return tuple(points)


def _is_constant(intensity: GridIntensity) -> bool:
    series = intensity.series
    return len(series.times_s) == 1 and math.isinf(series.last_step_s)


def _method(intensity: GridIntensity) -> str:
    prov = intensity.provenance
    if not _is_constant(intensity):
        return f"time-weighted, {prov.resolution} intensity"
    if prov.resolution == "user":
        return "intensity given by the user × energy"
    return f"{prov.resolution} {prov.kind} intensity × energy"
