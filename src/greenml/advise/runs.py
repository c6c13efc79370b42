"""Read what an advisor needs of a stored run: its record and peak sampled memory."""

from __future__ import annotations

from typing import Any

from greenml.advise.workload import Workload, workload_from_run


def peak_memory_bytes(samples: list[dict[str, Any]]) -> dict[str, float]:
    """Largest ``memory_used_bytes`` sampled per device."""
    peaks: dict[str, float] = {}
    for sample in samples:
        value = sample.get("memory_used_bytes")
        if isinstance(value, (int, float)) and value == value:  # not NaN
            device = str(sample.get("device"))
            peaks[device] = max(peaks.get(device, 0.0), float(value))
    return peaks


def load_workload(
    store: Any,
    run_id: str,
    *,
    flops: float | None = None,
    precision: str | None = None,
    memory_gb: float | None = None,
) -> tuple[Workload, dict[str, Any]]:
    """The workload of a stored run, and its record.

    Raises:
        RunNotFound: No run matches ``run_id``.
        ConfigError: The run cannot be scaled (see :func:`workload_from_run`).
    """
    record = store.get_record(run_id)
    peaks = peak_memory_bytes(store.samples(str(record["id"])))
    workload = workload_from_run(
        record, peaks, flops=flops, precision=precision, memory_gb=memory_gb
    )
    return workload, record
