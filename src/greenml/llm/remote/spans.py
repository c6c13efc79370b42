"""Reading a model call from OpenTelemetry GenAI span attributes (``gen_ai.*``).

Semantic conventions for generative AI (OpenTelemetry, 2024–2025): ``gen_ai.provider.name``
(formerly ``gen_ai.system``), ``gen_ai.operation.name``, ``gen_ai.request.model``,
``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` and
``gen_ai.usage.output_tokens`` (formerly ``prompt_tokens``/``completion_tokens``).
A greenml proxy's measurement may ride along as ``greenml.proxy.energy_j``,
``greenml.proxy.uncertainty_j`` and ``greenml.proxy.method``. Attribute values
are external input: a value of the wrong type reads as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from greenml.llm.remote.usage import ProxyEnergy, parse_energy

TOOL_OPERATIONS = frozenset({"execute_tool"})
MODEL_OPERATIONS = frozenset(
    {"chat", "text_completion", "generate_content", "embeddings", "create_agent", "invoke_agent"}
)


@dataclass(frozen=True)
class SpanCall:
    """A model call read from a span's attributes."""

    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    energy: ProxyEnergy | None


def _text(attrs: Mapping[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _count(attrs: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attrs.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10**12:
            return value
    return None


def is_tool_span(attrs: Mapping[str, Any]) -> bool:
    """A span of a tool call (``gen_ai.operation.name = execute_tool``)."""
    return _text(attrs, "gen_ai.operation.name") in TOOL_OPERATIONS


def span_call(attrs: Mapping[str, Any]) -> SpanCall | None:
    """The model call a span describes, or ``None`` (no model, or no token counts)."""
    model = _text(attrs, "gen_ai.response.model", "gen_ai.request.model")
    inputs = _count(attrs, "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
    outputs = _count(attrs, "gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
    if model is None or (inputs is None and outputs is None) or is_tool_span(attrs):
        return None
    provider = _text(attrs, "gen_ai.provider.name", "gen_ai.system") or "unknown"
    energy = parse_energy(
        {
            "energy": {
                "energy_j": attrs.get("greenml.proxy.energy_j"),
                "uncertainty_j": attrs.get("greenml.proxy.uncertainty_j"),
                "method": attrs.get("greenml.proxy.method"),
            }
        }
    )
    return SpanCall(provider, model, inputs or 0, outputs or 0, energy)
