"""MLflow's own system metrics as a second source of GPU energy.

When the user's MLflow run logs system metrics (``mlflow.enable_system_metrics_logging()``),
MLflow samples each GPU's power through NVML as ``system/gpu_N_power_usage_watts``
(``system/node_K/gpu_N_…`` on several nodes), every 10 s by default. The MLflow sink
integrates those samples (trapezoid) over the greenml run's span and logs the result
beside greenml's own GPU energy, with their relative difference: two independent
readings of the same GPUs, so a team sees when they disagree.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

POWER_KEY = re.compile(r"^system/(?:node_[^/]+/)?gpu_\d+_power_usage_watts$")


def integrate_j(points: Iterable[tuple[float, float]], start_s: float, end_s: float) -> float:
    """Energy (J) of power samples ``(unix_s, watts)`` between ``start_s`` and ``end_s``
    (trapezoid between the samples inside the span; none or one sample: 0)."""
    inside = sorted((t, w) for t, w in points if start_s <= t <= end_s and w >= 0)
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in itertools.pairwise(inside))


def system_gpu_energy_j(client: Any, run_id: str, record: dict[str, Any]) -> float | None:
    """GPU energy from MLflow's system metrics of ``run_id`` over the record's span, or
    ``None`` when the run has no GPU power metrics (or the record no span)."""
    span = _span(record)
    if span is None:
        return None
    keys = [k for k in client.get_run(run_id).data.metrics if POWER_KEY.match(k)]
    if not keys:
        return None
    total = 0.0
    for key in keys:
        history: Sequence[Any] = client.get_metric_history(run_id, key)
        total += integrate_j(((m.timestamp / 1000.0, m.value) for m in history), *span)
    return total


def second_source_metrics(greenml_gpu_j: float | None, mlflow_gpu_j: float) -> dict[str, float]:
    """``greenml/mlflow_system/gpu_energy_kwh`` and, with greenml's own GPU energy, the
    relative difference ``greenml/mlflow_system/gpu_energy_diff_rel`` (MLflow vs greenml)."""
    out = {"greenml/mlflow_system/gpu_energy_kwh": mlflow_gpu_j / 3.6e6}
    if greenml_gpu_j:
        out["greenml/mlflow_system/gpu_energy_diff_rel"] = mlflow_gpu_j / greenml_gpu_j - 1
    return out


def _span(record: dict[str, Any]) -> tuple[float, float] | None:
    try:
        start = datetime.fromisoformat(str(record["started_at"])).timestamp()
        end = datetime.fromisoformat(str(record["ended_at"])).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
    return (start, end) if end > start else None
