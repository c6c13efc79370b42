"""Samples packed per device and flush, for analysis over millions of samples.

Each flush of the recorder stores, per device, one block: the samples' values
as little-endian float64, row by row in the order of ``BLOCK_COLUMNS`` (NaN for
a missing value). Reading a long run is then a few hundred blob reads and one
``numpy.frombuffer`` instead of a million Python rows. The ``samples`` table
keeps every sample too, for SQL, CSV export and older runs.

Lazy imports: numpy (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from greenml.measure.measurement import Sample
from greenml.store.schema import BLOCK_COLUMNS

_METRICS = BLOCK_COLUMNS[2:]


def pack_blocks(run_id: str, items: Sequence[Sample]) -> list[dict[str, Any]]:
    """One ``sample_blocks`` row per (device, component) of ``items``."""
    grouped: dict[tuple[str, str], array[float]] = {}
    for s in items:
        values = grouped.setdefault((s.device, s.component), array("d"))
        values.append(float(s.time_s))
        values.append(math.nan if s.power_w is None else float(s.power_w))
        for name in _METRICS:
            value = s.metrics.get(name)
            values.append(math.nan if value is None else float(value))
    rows = []
    for (device, component), values in grouped.items():
        if sys.byteorder != "little":
            values.byteswap()
        rows.append({
            "run_id": run_id, "device": device, "component": component,
            "count": len(values) // len(BLOCK_COLUMNS), "data": values.tobytes(),
        })  # fmt: skip
    return rows


def unpack_blocks(blocks: Iterable[tuple[str, str, int, bytes]]) -> dict[str, Any]:
    """Numpy columns of all blocks, ordered by time (the ``Store.sample_columns`` shape)."""
    import numpy as np

    width = len(BLOCK_COLUMNS)
    devices: list[str] = []
    components: list[str] = []
    values: list[Any] = []
    device_codes: list[Any] = []
    component_codes: list[Any] = []
    for device, component, count, data in blocks:
        if device not in devices:
            devices.append(device)
        if component not in components:
            components.append(component)
        values.append(np.frombuffer(data, dtype="<f8").reshape(count, width))
        device_codes.append(np.full(count, devices.index(device), dtype=np.int32))
        component_codes.append(np.full(count, components.index(component), dtype=np.int32))
    table = np.concatenate(values) if values else np.empty((0, width))
    order = np.argsort(table[:, 0], kind="stable")
    out: dict[str, Any] = {"devices": devices, "components": components}
    names = ("time_s", *BLOCK_COLUMNS[1:])
    for i, name in enumerate(names):
        out[name] = np.ascontiguousarray(table[order, i])
    for name, codes in (("device", device_codes), ("component", component_codes)):
        joined = np.concatenate(codes) if codes else np.empty(0, dtype=np.int32)
        out[name] = joined[order]
    return out
