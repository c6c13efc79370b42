"""Energy, CO2eq and water of remote LLM API calls and of agent workflows.

- :func:`instrument` wraps an ``openai`` or ``anthropic`` client;
- :class:`Workflow` rolls up the calls made inside it (a :class:`greenml.Run`
  does the same and stores them in its record);
- :class:`GreenmlSpanProcessor` does it for OpenTelemetry GenAI spans;
- :func:`estimate` is the size-based energy model for calls no proxy measured.

Lazy: nothing heavy is imported until used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

if TYPE_CHECKING:
    from greenml.llm.remote.calls import LlmCall
    from greenml.llm.remote.energy_model import estimate
    from greenml.llm.remote.otel import GreenmlSpanProcessor
    from greenml.llm.remote.sdk import instrument
    from greenml.llm.remote.workflow import Workflow, tool

__all__ = ["GreenmlSpanProcessor", "LlmCall", "Workflow", "estimate", "instrument", "tool"]
_WHERE = {
    "instrument": "greenml.llm.remote.sdk",
    "Workflow": "greenml.llm.remote.workflow",
    "tool": "greenml.llm.remote.workflow",
    "estimate": "greenml.llm.remote.energy_model",
    "LlmCall": "greenml.llm.remote.calls",
    "GreenmlSpanProcessor": "greenml.llm.remote.otel",
}


__getattr__ = lazy_exports(__name__, _WHERE)
