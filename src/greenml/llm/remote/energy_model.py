"""Energy of a remote LLM call estimated from the model's size: a stated, cited model.

    E = (2 × N_active × tokens) FLOP ÷ (peak FLOP/s × utilization) × P_gpu × overhead

- ``2 × N_active`` FLOPs per token for a forward pass (Kaplan et al., "Scaling Laws
  for Neural Language Models", arXiv:2001.08361, 2020), with ``N_active`` the active
  parameters (``data/llm_models.csv``; mixture-of-experts models count the experts a
  token uses);
- an NVIDIA H100 SXM: 989 TFLOP/s dense BF16 at its 700 W board power (NVIDIA H100
  Tensor Core GPU datasheet), drawing that power while busy;
- utilization (MFU): prefill is compute-bound, 40 % (range 20–60 %); decode is
  memory-bound, 10 % (range 3–30 %) — greenml's stated assumption for batched serving;
- overhead ×1.56 (range 1.2–2.2): the server's CPU, memory and network at 1.3×
  the GPUs (1.15–1.6) times a hyperscale PUE of 1.2 (1.05–1.4). The figure is
  facility energy.

Each factor has a low and a high; the range multiplies the lows and the highs, so
the stated uncertainty covers all of them at once. A model of unknown size gets
1–1,000 B active parameters, labelled. No number here was measured: every
estimate says so (``method = "estimated"``).
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass

from greenml.data import packaged

PEAK_FLOPS_PER_S = 989e12
GPU_POWER_W = 700.0
HARDWARE = "NVIDIA H100 SXM, 989 TFLOP/s dense BF16 at 700 W (NVIDIA datasheet)"
PREFILL_UTIL = (0.2, 0.4, 0.6)
DECODE_UTIL = (0.03, 0.1, 0.3)
OVERHEAD = (1.2, 1.56, 2.2)
UNKNOWN_ACTIVE_B = (1.0, 1000.0)
ASSUMPTIONS = (
    f"{HARDWARE}; 2 × active params FLOP/token (Kaplan et al. 2020); utilization prefill "
    f"{PREFILL_UTIL[1]:.0%} ({PREFILL_UTIL[0]:.0%}–{PREFILL_UTIL[2]:.0%}), decode "
    f"{DECODE_UTIL[1]:.0%} ({DECODE_UTIL[0]:.0%}–{DECODE_UTIL[2]:.0%}); server overhead × PUE "
    f"{OVERHEAD[1]} ({OVERHEAD[0]}–{OVERHEAD[2]})"
)


@dataclass(frozen=True)
class ModelSize:
    """Active parameters of a model (billions), a range when not published."""

    name: str
    active_low_b: float
    active_high_b: float
    basis: str  # "published", "assumed range" or "size unknown"
    source: str

    @property
    def active_b(self) -> float:
        """The central value: the geometric mean of the range."""
        return math.sqrt(self.active_low_b * self.active_high_b)


@dataclass(frozen=True)
class Estimate:
    """An estimated energy with its range (joules, facility energy)."""

    energy_j: float
    low_j: float
    high_j: float
    prefill_j: float
    decode_j: float
    size: ModelSize

    @property
    def uncertainty_j(self) -> float:
        """The larger distance from the central value to an end of the range."""
        return max(self.high_j - self.energy_j, self.energy_j - self.low_j)

    @property
    def basis(self) -> str:
        """One line: which size was used and the hardware assumption."""
        if self.size.active_low_b == self.size.active_high_b:
            size = f"{_b(self.size.active_low_b)} active ({self.size.basis}: {self.size.source})"
        else:
            size = (
                f"{_b(self.size.active_low_b)}–{_b(self.size.active_high_b)} active "
                f"({self.size.basis}: {self.size.source})"
            )
        return f"estimated from {self.size.name}: {size}; {ASSUMPTIONS}"


def _b(value: float) -> str:
    return f"{value:g} B"


@functools.cache
def _rows() -> tuple[tuple[str, ModelSize], ...]:
    text = packaged("llm_models.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(text.splitlines()):
        size = ModelSize(
            name=row["pattern"],
            active_low_b=float(row["active_low_b"]),
            active_high_b=float(row["active_high_b"]),
            basis=row["basis"],
            source=row["source"],
        )
        rows.append((row["pattern"], size))
    return tuple(sorted(rows, key=lambda r: -len(r[0])))


def model_size(model: str) -> ModelSize:
    """The size of ``model``: the longest table pattern its name contains, else unknown."""
    key = " ".join(str(model).lower().split()).replace("_", "-")
    for pattern, size in _rows():
        if pattern in key:
            return size
    return ModelSize(
        name=str(model) or "(no model name)",
        active_low_b=UNKNOWN_ACTIVE_B[0],
        active_high_b=UNKNOWN_ACTIVE_B[1],
        basis="size unknown",
        source="not in greenml's table; the widest range is assumed",
    )


def estimate(model: str | ModelSize, input_tokens: int, output_tokens: int) -> Estimate:
    """Estimate the facility energy of one call from its tokens.

    Raises:
        ValueError: A negative token count.
    """
    if input_tokens < 0 or output_tokens < 0:
        raise ValueError(f"token counts must be ≥ 0, got {input_tokens}, {output_tokens}")
    size = model if isinstance(model, ModelSize) else model_size(model)
    j_per_flop_busy = GPU_POWER_W / PEAK_FLOPS_PER_S

    def phase(params_b: float, tokens: int, util: float, overhead: float) -> float:
        return 2 * params_b * 1e9 * tokens * j_per_flop_busy / util * overhead

    lo, mid, hi = size.active_low_b, size.active_b, size.active_high_b
    prefill = phase(mid, input_tokens, PREFILL_UTIL[1], OVERHEAD[1])
    decode = phase(mid, output_tokens, DECODE_UTIL[1], OVERHEAD[1])
    low = phase(lo, input_tokens, PREFILL_UTIL[2], OVERHEAD[0]) + phase(
        lo, output_tokens, DECODE_UTIL[2], OVERHEAD[0]
    )
    high = phase(hi, input_tokens, PREFILL_UTIL[0], OVERHEAD[2]) + phase(
        hi, output_tokens, DECODE_UTIL[0], OVERHEAD[2]
    )
    return Estimate(prefill + decode, low, high, prefill, decode, size)
