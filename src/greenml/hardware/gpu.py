"""GPU and accelerator specs: TDP, memory and peak throughput per precision.

The table (``data/gpus.csv``) gives **dense** tensor-core peaks per precision,
cross-checked against vendor datasheets; ``fp16_tflops_sparse`` is the 2:4
sparse figure as the vendor quotes it (see ``data/SOURCES.md`` for every
choice, and where the public tables disagree).

Names match case-insensitively on the row name and its aliases (what NVML
reports, e.g. ``NVIDIA H100 80GB HBM3``), ignoring vendor prefixes (``NVIDIA``,
``Tesla``, ``GeForce``, ``AMD Instinct``), punctuation and spacing. A memory
size in the name (``80GB``) must agree with the row's when the rest of the name
only matches loosely; a bare family name (``H100``) means the row that lists it
as an alias.

Lazy imports: rapidfuzz (~50 ms) is imported inside the functions that use it, so
importing this module stays cheap.
"""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass

from greenml.data import packaged
from greenml.errors import ConfigError

#: Precisions :meth:`GpuSpec.peak_tflops` knows, and the column each reads.
PRECISIONS: dict[str, str] = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "fp16": "fp16_tflops",
    "bf16": "bf16_tflops",
    "int8": "int8_tops",
    "fp16_sparse": "fp16_tflops_sparse",
}

_PREFIXES = {"nvidia", "tesla", "geforce", "quadro", "amd", "instinct", "radeon", "google"}
_MEMORY_RE = re.compile(r"\b(\d+)\s*gb\b")
_MEMORY_TYPE_RE = re.compile(r"\b(?:hbm\d*e?|gddr\d+x?)\b")


@dataclass(frozen=True)
class GpuSpec:
    """One row of the GPU table. Throughputs are dense peaks, ``None`` where none.

    Attributes:
        name: Canonical name, e.g. ``H100 SXM``.
        aliases: Other names, NVML's first where known.
        vendor: ``NVIDIA``, ``AMD`` or ``Google``.
        architecture: e.g. ``Hopper``.
        tdp_w: Board power (TDP / max board power) in watts; ``None`` if unpublished.
        memory_gb: Device memory in GB.
        fp32_tflops: Non-tensor FP32 peak.
        tf32_tflops: Dense TF32 tensor peak.
        fp16_tflops: Dense FP16 tensor peak with FP32 accumulate.
        bf16_tflops: Dense BF16 tensor peak.
        int8_tops: Dense INT8 tensor peak (tera-operations/s).
        fp16_tflops_sparse: FP16 tensor peak with 2:4 sparsity, as the vendor quotes it.
        bf16_supported: Whether the device computes in bfloat16.
        source: Datasheet (name, year, URL where known).
        notes: Which figure was chosen and why.
    """

    name: str
    aliases: tuple[str, ...]
    vendor: str
    architecture: str
    tdp_w: float | None
    memory_gb: float
    fp32_tflops: float | None
    tf32_tflops: float | None
    fp16_tflops: float | None
    bf16_tflops: float | None
    int8_tops: float | None
    fp16_tflops_sparse: float | None
    bf16_supported: bool
    source: str
    notes: str = ""

    def peak_tflops(self, precision: str) -> float:
        """Peak throughput in TFLOPS (TOPS for ``int8``) at one precision.

        Args:
            precision: ``fp32``, ``tf32``, ``fp16``, ``bf16``, ``int8`` or
                ``fp16_sparse`` (the vendor's 2:4-sparse FP16 figure).

        Raises:
            ConfigError: Unknown precision, or none listed for this device.
        """
        key = normalize_precision(precision)
        value: float | None = getattr(self, PRECISIONS[key])
        if key == "bf16" and not self.bf16_supported:
            value = None
        if value is None:
            have = [p for p, col in PRECISIONS.items() if getattr(self, col) is not None]
            raise ConfigError(
                f"{self.name} has no {key} peak in the GPU table; it has: {', '.join(have)}"
            )
        return value

    def precisions(self) -> list[str]:
        """The precisions this device has a peak figure for."""
        return [p for p, col in PRECISIONS.items() if getattr(self, col) is not None]


def normalize_precision(precision: str) -> str:
    """``FP16``, ``fp16-sparse`` … → a key of :data:`PRECISIONS`; ConfigError if unknown."""
    key = precision.strip().lower().replace("-", "_")
    if key not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    return key


def _words(name: str) -> list[str]:
    text = re.sub(r"\((?:r|tm)\)|[®™]", "", name.lower())
    words = re.sub(r"[^a-z0-9.]+", " ", text).split()
    while words and words[0] in _PREFIXES:
        words.pop(0)
    return words


def _full_key(name: str) -> str:
    return "".join(_words(name))


def _loose_key(name: str) -> str:
    text = " ".join(_words(name))
    return "".join(_MEMORY_TYPE_RE.sub(" ", _MEMORY_RE.sub(" ", text)).split())


def _memory_gb(name: str) -> int | None:
    found = _MEMORY_RE.search(" ".join(_words(name)))
    return int(found.group(1)) if found else None


def _float(text: str) -> float | None:
    return float(text) if text.strip() else None


def gpu_specs() -> list[GpuSpec]:
    """Every row of the packaged GPU table, in table order."""
    return list(_load())


@functools.cache
def _load() -> tuple[GpuSpec, ...]:
    text = packaged("gpus.csv").read_text(encoding="utf-8")
    specs = []
    for row in csv.DictReader(text.splitlines()):
        specs.append(
            GpuSpec(
                name=row["name"],
                aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
                vendor=row["vendor"],
                architecture=row["architecture"],
                tdp_w=_float(row["tdp_w"]),
                memory_gb=float(row["memory_gb"]),
                fp32_tflops=_float(row["fp32_tflops"]),
                tf32_tflops=_float(row["tf32_tflops"]),
                fp16_tflops=_float(row["fp16_tflops"]),
                bf16_tflops=_float(row["bf16_tflops"]),
                int8_tops=_float(row["int8_tops"]),
                fp16_tflops_sparse=_float(row["fp16_tflops_sparse"]),
                bf16_supported=row["bf16_supported"].strip().lower() == "yes",
                source=row["source"],
                notes=row.get("notes", "") or "",
            )
        )
    return tuple(specs)


@functools.cache
def _index() -> tuple[dict[str, GpuSpec], dict[str, list[GpuSpec]]]:
    full: dict[str, GpuSpec] = {}
    loose: dict[str, list[GpuSpec]] = {}
    for spec in _load():
        for name in (spec.name, *spec.aliases):
            key = _full_key(name)
            other = full.setdefault(key, spec)
            if other is not spec:
                raise ConfigError(f"gpus.csv: {name!r} names both {other.name} and {spec.name}")
            bucket = loose.setdefault(_loose_key(name), [])
            if spec not in bucket:
                bucket.append(spec)
    return full, loose


@functools.lru_cache(maxsize=128)
def gpu_spec(name: str) -> GpuSpec:
    """Look up a GPU or accelerator by name or alias.

    Args:
        name: e.g. ``H100``, ``NVIDIA A100-SXM4-40GB``, ``Tesla V100S-PCIE-32GB``.

    Raises:
        ConfigError: No row matches (the message lists the 5 closest names),
            or the name fits several rows equally.
    """
    full, loose = _index()
    exact = full.get(_full_key(name))
    if exact is not None:
        return exact
    loose_key = _loose_key(name)
    if loose_key:
        candidates = loose.get(loose_key, [])
        memory = _memory_gb(name)
        if memory is not None:
            candidates = [s for s in candidates if s.memory_gb == memory]
        if len(candidates) > 1:
            # A bare family alias (``H100``) names the default board.
            default = full.get(loose_key)
            candidates = [default] if default in candidates else candidates
        if len(candidates) == 1:
            return candidates[0]
        if candidates:
            names = ", ".join(s.name for s in candidates)
            raise ConfigError(f"GPU {name!r} is ambiguous: {names}")
    raise ConfigError(f"unknown GPU {name!r}; closest: {', '.join(closest_gpu_names(name))}")


def closest_gpu_names(name: str, limit: int = 5) -> list[str]:
    """The ``limit`` table names closest to ``name`` (by names and aliases)."""
    from rapidfuzz import fuzz, process

    keys: dict[str, str] = {}
    for spec in _load():
        for alias in (spec.name, *spec.aliases):
            keys.setdefault(_full_key(alias), spec.name)
    ranked = process.extract(_full_key(name), list(keys), scorer=fuzz.ratio, limit=None)
    out: list[str] = []
    for key, _score, _i in ranked:
        if keys[key] not in out:
            out.append(keys[key])
        if len(out) == limit:
            break
    return out
