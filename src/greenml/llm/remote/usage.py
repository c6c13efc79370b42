"""Reading token counts and the proxy's ``usage.energy`` from a provider's usage block.

The usage block is an external input (a server's JSON, or the SDK object made
from it): every field is checked, and anything that is not a finite number ≥ 0
reads as absent rather than as a figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ENERGY_METHODS = frozenset({"counter", "power-integrated", "estimated"})


@dataclass(frozen=True)
class ProxyEnergy:
    """The energy a greenml proxy measured for one request (``usage.energy``)."""

    energy_j: float
    uncertainty_j: float
    method: str
    prefill_j: float | None = None
    decode_j: float | None = None
    co2eq_g: float | None = None


@dataclass(frozen=True)
class Tokens:
    """Prompt and generated tokens of one call."""

    input_tokens: int | None
    output_tokens: int | None


def as_mapping(obj: Any) -> dict[str, Any]:
    """A usage object as a dict: pydantic models (extra fields included), mappings, or ``{}``."""
    if obj is None:
        return {}
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            data = dump()
        except Exception:
            data = None
        if isinstance(data, Mapping):
            out = dict(data)
            extra = getattr(obj, "model_extra", None)
            if isinstance(extra, Mapping):
                out.update(extra)
            return out
    return {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _count(value: Any) -> int | None:
    number = _number(value)
    if number is None or number != int(number) or number > 1e12:
        return None
    return int(number)


def parse_energy(usage: Any) -> ProxyEnergy | None:
    """The ``energy`` object of a usage block, or ``None`` when absent or not valid."""
    raw = as_mapping(usage).get("energy")
    energy = as_mapping(raw)
    energy_j = _number(energy.get("energy_j"))
    if energy_j is None:
        return None
    method = energy.get("method")
    return ProxyEnergy(
        energy_j=energy_j,
        uncertainty_j=_number(energy.get("uncertainty_j")) or 0.0,
        method=method if isinstance(method, str) and method in ENERGY_METHODS else "unstated",
        prefill_j=_number(energy.get("prefill_j")),
        decode_j=_number(energy.get("decode_j")),
        co2eq_g=_number(energy.get("co2eq_g")),
    )


def parse_tokens(usage: Any) -> Tokens:
    """Input and output tokens from an OpenAI (``prompt_tokens``/``completion_tokens``) or
    Anthropic (``input_tokens`` + cache tokens / ``output_tokens``) usage block."""
    data = as_mapping(usage)
    if "prompt_tokens" in data or "completion_tokens" in data:
        return Tokens(_count(data.get("prompt_tokens")), _count(data.get("completion_tokens")))
    inputs = _count(data.get("input_tokens"))
    if inputs is not None:
        for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
            inputs += _count(data.get(key)) or 0
    return Tokens(inputs, _count(data.get("output_tokens")))
