"""Hardware specs database: CPU model → TDP (``cpu``), GPU/accelerator specs (``gpu``).

Everything the former ``greenml.hardware`` module exported is re-exported
here, so ``from greenml.hardware import cpu_tdp`` keeps working.
"""

from __future__ import annotations

from greenml.hardware.cpu import (
    CPUINFO,
    CpuMatch,
    cpu_count_logical,
    cpu_model_name,
    cpu_socket_count,
    cpu_tdp,
    normalize_cpu_name,
)
from greenml.hardware.gpu import PRECISIONS, GpuSpec, gpu_spec, gpu_specs

__all__ = [
    "CPUINFO",
    "PRECISIONS",
    "CpuMatch",
    "GpuSpec",
    "cpu_count_logical",
    "cpu_model_name",
    "cpu_socket_count",
    "cpu_tdp",
    "gpu_spec",
    "gpu_specs",
    "normalize_cpu_name",
]
