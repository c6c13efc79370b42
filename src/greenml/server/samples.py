"""A run's samples as JSON columns per device, thinned to a number of points on request."""

from __future__ import annotations

import math
from typing import Any

from greenml.store.schema import BLOCK_COLUMNS


def sample_series(columns: dict[str, Any], max_points: int | None) -> list[dict[str, Any]]:
    """Per device: ``device``, ``component``, ``count`` (stored), and the columns.

    With ``max_points``, each device keeps at most that many points: the mean of
    each of ``max_points`` equal slices of its samples (time and values alike), so
    the energy under the curve is kept and spikes are averaged, not dropped at random.
    A slice whose values are all missing stays missing (``null``).
    """
    import numpy as np

    out = []
    for code, device in enumerate(columns["devices"]):
        mask = columns["device"] == code
        count = int(mask.sum())
        if not count:
            continue
        component = columns["components"][int(columns["component"][mask][0])]
        item: dict[str, Any] = {"device": device, "component": component, "count": count}
        starts = None
        if max_points is not None and count > max_points:
            starts = np.linspace(0, count, max_points + 1).astype(int)[:-1]
        for name in ("time_s", *BLOCK_COLUMNS[1:]):
            values = columns[name][mask]
            if starts is not None:
                known = ~np.isnan(values)
                sums = np.add.reduceat(np.where(known, values, 0.0), starts)
                counts = np.add.reduceat(known.astype(np.int64), starts)
                values = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
            key = "t" if name == "time_s" else name
            item[key] = [None if math.isnan(v) else v for v in values.tolist()]
        out.append(item)
    return out
