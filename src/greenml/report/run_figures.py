"""Figures that lay several runs over one axis: each run's power and grid intensity.

Runs of a report may be days apart, so the x axis is the time since each
run's first point, in seconds; each run is one line, named as the report
names runs. At most :data:`MAX_RUNS_DRAWN` runs are drawn (those that used
the most energy), and the title says when others were left out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from greenml.report import records as rec
from greenml.report.figures import power_over_time
from greenml.report.model import Figure, Series

if TYPE_CHECKING:
    from greenml.report.runset import RunSet

MAX_RUNS_DRAWN = 8
X_LABEL = "time since the run's start (s)"


def power_per_run(runs: RunSet) -> Figure | None:
    """Total IT power of each run over its own time (W); ``None`` without two samples."""
    import numpy as np

    series = []
    for run_id, record in _largest(runs):
        per_component = power_over_time(runs.samples(run_id))
        if per_component is None:
            continue
        xs = [np.asarray(s.x, dtype=float) for s in per_component.series]
        times = np.unique(np.concatenate(xs))
        total = np.zeros_like(times)
        for s in per_component.series:
            total += np.interp(times, np.asarray(s.x, dtype=float), np.asarray(s.y, dtype=float))
        series.append(Series(rec.label(record), list(times - times[0]), list(total)))
    return _figure("Power over time, per run", series, "W", len(runs.records))


def intensity_per_run(runs: RunSet) -> Figure | None:
    """Grid carbon intensity during each run (g/kWh); ``None`` when no run's varied."""
    series = []
    for _, record in _largest(runs):
        points = (record.get("carbon") or {}).get("intensity_series") or []
        if len(points) >= 2:
            t0 = float(points[0][0])
            xs = [float(t) - t0 for t, _ in points]
            series.append(Series(rec.label(record), xs, [float(g) for _, g in points]))
    return _figure("Carbon intensity over each run", series, "g CO2eq/kWh", len(runs.records))


def _largest(runs: RunSet) -> list[tuple[str, dict[str, Any]]]:
    """The runs to draw: the MAX_RUNS_DRAWN that used the most energy, in report order."""
    pairs = list(zip(runs.ids, runs.records, strict=True))
    if len(pairs) <= MAX_RUNS_DRAWN:
        return pairs
    energy = {run_id: sum(d[3] for d in rec.devices(r)) for run_id, r in pairs}
    keep = set(sorted(energy, key=energy.__getitem__, reverse=True)[:MAX_RUNS_DRAWN])
    return [(i, r) for i, r in pairs if i in keep]


def _figure(title: str, series: list[Series], unit: str, runs: int) -> Figure | None:
    if not series:
        return None
    if runs > MAX_RUNS_DRAWN:
        title += f" (the {MAX_RUNS_DRAWN} runs that used the most energy, of {runs})"
    return Figure(kind="line", title=title, series=series, x_label=X_LABEL, y_label=unit)
