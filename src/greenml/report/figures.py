"""Figures shared by report kinds: energy by component, power over time, energy per run.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from greenml.quantities import energy_axis
from greenml.report import records as rec
from greenml.report.model import Figure, Series

if TYPE_CHECKING:
    from greenml.report.runset import RunSet

MAX_POINTS = 600
"""Power timelines are thinned to about this many points per component."""


def energy_by_component(runs: RunSet) -> Figure:
    """IT energy per component (GPU, CPU, DRAM) over all runs, as a pie, in one unit that
    fits (J, kJ, kWh or MWh)."""
    names = list(runs.components)
    size, unit = energy_axis(max((runs.components[c][0] for c in names), default=0.0))
    return Figure(
        kind="pie",
        title="IT energy by component",
        series=[Series("energy", names, [runs.components[c][0] / size for c in names])],
        x_label="component",
        y_label=unit,
        error={"energy": [runs.components[c][1] / size for c in names]},
    )


def energy_per_run(runs: RunSet) -> Figure:
    """IT energy of each run, stacked by component, with ± per component, in one unit."""
    labels = [rec.label(r) for r in runs.records]
    totals = [sum(d[3] for d in rec.devices(r)) for r in runs.records]
    size, unit = energy_axis(max(totals, default=0.0))
    series, errors = [], {}
    for comp in runs.components:
        values, spread = [], []
        for record in runs.records:
            devs = [d for d in rec.devices(record) if d[0] == comp]
            values.append(sum(d[3] for d in devs) / size)
            spread.append(sum(d[3] * d[4] for d in devs) / size)
        series.append(Series(comp, list(labels), values))
        errors[comp] = spread
    return Figure(
        kind="stacked-bars",
        title="IT energy per run, by component",
        series=series,
        x_label="run",
        y_label=unit,
        error=errors,
    )


def power_over_time(samples: list[dict[str, Any]]) -> Figure | None:
    """Power per component over one run: devices of a component summed, W.

    Devices are read in one sweep but not at exactly the same instant, so each
    device's power is interpolated (linearly) at every sampling time of its
    component before the sum. ``None`` when there are fewer than two samples.
    """
    import numpy as np

    by_component: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for s in samples:
        if s.get("power_w") is None:
            continue
        point = (float(s["time_s"]), float(s["power_w"]))
        by_component.setdefault(str(s["component"]), {}).setdefault(str(s["device"]), []).append(
            point
        )
    series = []
    for comp, devices in by_component.items():
        times = np.unique(np.concatenate([[t for t, _ in pts] for pts in devices.values()]))
        if len(times) < 2:
            continue
        total = np.zeros_like(times)
        for points in devices.values():
            points.sort()
            t = np.array([p[0] for p in points])
            w = np.array([p[1] for p in points])
            total += np.interp(times, t, w)
        if len(times) > MAX_POINTS:
            keep = np.linspace(0, len(times) - 1, MAX_POINTS).round().astype(int)
            times, total = times[keep], total[keep]
        series.append(Series(comp, [float(x) for x in times], [float(y) for y in total]))
    if not series:
        return None
    return Figure(
        kind="line",
        title="Power over time, by component",
        series=series,
        x_label="time (UTC)",
        y_label="W",
    )


def intensity_over_run(record: dict[str, Any]) -> Figure | None:
    """Grid carbon intensity during one run (g/kWh), from its carbon block's series.

    ``None`` for a run whose intensity did not vary (a yearly or a given figure)
    or that has no carbon block.
    """
    carbon = record.get("carbon") or {}
    points = carbon.get("intensity_series") or []
    if len(points) < 2:
        return None
    return Figure(
        kind="line",
        title="Carbon intensity over the run",
        series=[
            Series(
                str(carbon.get("source", "grid")),
                [float(t) for t, _ in points],
                [float(g) for _, g in points],
            )
        ],
        x_label="time (UTC)",
        y_label="g CO2eq/kWh",
    )
