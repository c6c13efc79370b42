"""A workload to place on hardware: its work (FLOPs), precision, memory, and where they came from.

Three ways to say how much work a job is, in this order of preference:

- ``--flops`` given by the user (from a profiler, or 6·N·D for a transformer);
- a ``flops=`` tag on the stored run (``greenml run --tag flops=1.5e11 -- …``);
- a run measured on a GPU of the hardware table: the work it did is its
  duration × GPUs × the GPU's peak at the precision × its model FLOPs
  utilization (MFU). The MFU cancels out of every comparison, since a
  candidate is assumed to reach the same MFU (see :mod:`greenml.advise.hardware`).

A run measured only on CPUs has no peak to scale from: it needs ``--flops`` or
a ``flops`` tag, and says so. Memory comes from ``--memory-gb`` or the run's
peak sampled memory (GPU memory, else the process tree's resident memory as a
proxy for the working set), plus a margin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from greenml.errors import ConfigError
from greenml.hardware.gpu import GpuSpec, gpu_spec, normalize_precision

MEMORY_MARGIN = 0.20
"""Headroom added to measured peak memory (activations vary, allocators fragment)."""

REFERENCE_MFU = 0.35
"""MFU assumed only to express a GPU-measured run's work in FLOPs for display.

Chowdhery et al., "PaLM" (2022), Table 3, report 46 % MFU for PaLM 540B and
21-38 % for GPT-3, Gopher and Megatron-Turing NLG; 35 % sits inside that range.
It cancels out of every ranking (each candidate is assumed to reach the same MFU)."""


@dataclass(frozen=True)
class Workload:
    """What has to be computed, and the measured run it comes from (if any).

    Attributes:
        flops: Floating-point operations of the whole job.
        flops_source: How the FLOPs were obtained.
        precision: A key of :data:`greenml.hardware.gpu.PRECISIONS`.
        precision_source: Given, tagged, or the default.
        memory_gb: Device memory the job needs (margin included); ``None`` unknown.
        memory_source: Where the memory figure comes from.
        run_id: The measured run, if any.
        measured_duration_s: The run's wall-clock time.
        measured_energy_j: The run's measured energy (IT).
        measured_on: What it ran on (GPU name, or ``CPU``).
        measured_gpu: The hardware-table row of the measured GPU, if one.
        measured_gpus: How many GPUs it used.
        measured_power_share: The run's mean GPU power ÷ TDP, if a GPU was measured.
        notes: What the reader should know.
    """

    flops: float
    flops_source: str
    precision: str
    precision_source: str
    memory_gb: float | None
    memory_source: str
    run_id: str | None = None
    measured_duration_s: float | None = None
    measured_energy_j: float | None = None
    measured_on: str | None = None
    measured_gpu: GpuSpec | None = None
    measured_gpus: int = 0
    measured_power_share: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "flops": self.flops,
            "flops_source": self.flops_source,
            "precision": self.precision,
            "precision_source": self.precision_source,
            "memory_gb": self.memory_gb,
            "memory_source": self.memory_source,
            "run_id": self.run_id,
            "measured_duration_s": self.measured_duration_s,
            "measured_energy_j": self.measured_energy_j,
            "measured_on": self.measured_on,
            "measured_gpus": self.measured_gpus,
            "measured_power_share": self.measured_power_share,
            "notes": list(self.notes),
        }


def positive(value: float, what: str) -> float:
    """``value`` if finite and > 0, else ConfigError naming ``what``."""
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and value > 0):
        raise ConfigError(f"{what} must be a number > 0, not {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{what} must be finite, not {value!r}")
    return float(value)


def _precision(given: str | None, tags: dict[str, Any]) -> tuple[str, str]:
    if given:
        return normalize_precision(given), "given (--precision)"
    raw = str(tags.get("precision") or tags.get("dtype") or "").lower()
    aliases = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}
    raw = aliases.get(raw, raw)
    if raw:
        return normalize_precision(raw), "the run's precision tag"
    return "fp32", "default: fp32 (no --precision and no precision tag on the run)"


def workload_from_flops(
    flops: float, precision: str | None = None, memory_gb: float | None = None
) -> Workload:
    """A workload given as FLOPs (no measured run)."""
    key, how = _precision(precision, {})
    memory, memory_source = _given_memory(memory_gb)
    return Workload(
        flops=positive(flops, "--flops"),
        flops_source="given (--flops)",
        precision=key,
        precision_source=how,
        memory_gb=memory,
        memory_source=memory_source,
    )


def _given_memory(memory_gb: float | None) -> tuple[float | None, str]:
    if memory_gb is None:
        return None, "unknown: no --memory-gb given; memory fit not checked"
    return positive(memory_gb, "--memory-gb"), "given (--memory-gb)"


def _gpu_devices(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    components = (record.get("energy") or {}).get("components") or {}
    devices = (components.get("gpu") or {}).get("devices") or {}
    return {k: v for k, v in devices.items() if isinstance(v, dict)}


def workload_from_run(
    record: dict[str, Any],
    peak_memory_bytes: dict[str, float],
    *,
    flops: float | None = None,
    precision: str | None = None,
    memory_gb: float | None = None,
) -> Workload:
    """The workload of a stored run (its record and peak sampled memory per device).

    Raises:
        ConfigError: The run has no duration, or measured no GPU and has no FLOPs.
    """
    run_id = str(record.get("id"))
    tags = record.get("tags") or {}
    duration = record.get("duration_s")
    if not isinstance(duration, (int, float)) or not duration > 0:
        raise ConfigError(f"run {run_id} has no duration to scale from (did it finish?)")
    energy_j = float((record.get("energy") or {}).get("total_j") or 0.0)
    key, precision_how = _precision(precision, tags)
    gpus = _gpu_devices(record)
    spec: GpuSpec | None = None
    share: float | None = None
    notes: list[str] = []
    if gpus:
        names = {str(d.get("name") or "") for d in gpus.values()}
        try:
            spec = gpu_spec(sorted(names)[0])
        except ConfigError as exc:
            notes.append(f"measured GPU not in the hardware table ({exc})")
        if spec is not None and spec.tdp_w:
            gpu_j = sum(float(d.get("energy_j") or 0.0) for d in gpus.values())
            share = min(1.0, gpu_j / duration / len(gpus) / spec.tdp_w)
    measured_on = f"{len(gpus)}× {spec.name}" if spec is not None else ("GPU" if gpus else "CPU")
    if flops is not None:
        work, work_how = positive(flops, "--flops"), "given (--flops)"
    elif tags.get("flops") is not None:
        try:
            work = positive(float(str(tags["flops"]).replace("_", "")), "the run's flops tag")
        except ValueError:
            bad = tags["flops"]
            raise ConfigError(f"run {run_id}: flops tag {bad!r} is not a number") from None
        work_how = "the run's flops tag"
    elif spec is not None:
        peak = spec.peak_tflops(key) * 1e12
        work = duration * len(gpus) * peak * REFERENCE_MFU
        work_how = (
            f"measured: {duration:.4g} s × {len(gpus)} {spec.name} × {peak / 1e12:g} TFLOP/s "
            f"{key} × MFU {REFERENCE_MFU:g} (Chowdhery et al. 2022 range; cancels out of "
            "the ranking)"
        )
    else:
        raise ConfigError(
            f"run {run_id} measured no GPU of the hardware table, so its work cannot be "
            "scaled from a GPU peak: give --flops, or tag the run (greenml run --tag flops=N)"
        )
    memory, memory_how = _memory(record, gpus, peak_memory_bytes, memory_gb)
    return Workload(
        flops=work,
        flops_source=work_how,
        precision=key,
        precision_source=precision_how,
        memory_gb=memory,
        memory_source=memory_how,
        run_id=run_id,
        measured_duration_s=float(duration),
        measured_energy_j=energy_j,
        measured_on=measured_on,
        measured_gpu=spec,
        measured_gpus=len(gpus),
        measured_power_share=share,
        notes=tuple(notes),
    )


def _memory(
    record: dict[str, Any],
    gpus: dict[str, dict[str, Any]],
    peak_memory_bytes: dict[str, float],
    memory_gb: float | None,
) -> tuple[float | None, str]:
    if memory_gb is not None:
        return _given_memory(memory_gb)
    margin = f" + {MEMORY_MARGIN:.0%} margin"
    gpu_peaks = [v for k, v in peak_memory_bytes.items() if k in gpus and v > 0]
    if gpu_peaks:
        gb = max(gpu_peaks) / 1e9 * (1 + MEMORY_MARGIN)
        return gb, f"peak GPU memory sampled in run {record.get('id')}{margin}"
    host = [v for k, v in peak_memory_bytes.items() if k.startswith("dram") and v > 0]
    if host:
        gb = max(host) / 1e9 * (1 + MEMORY_MARGIN)
        return gb, (
            f"peak resident memory of run {record.get('id')}'s process tree{margin} "
            "(a CPU run: its working set taken as the device memory it would need)"
        )
    return None, "unknown: the run sampled no memory and no --memory-gb given; fit not checked"
