"""GreenmlSpanProcessor on the real opentelemetry-sdk with GenAI-convention spans."""

from __future__ import annotations

import pytest

from greenml.llm.remote import Workflow
from tests.llm_remote.conftest import require

require("opentelemetry.sdk")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)

from greenml.llm.remote.otel import GreenmlSpanProcessor  # noqa: E402


def setup() -> tuple[GreenmlSpanProcessor, InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    processor = GreenmlSpanProcessor(SimpleSpanProcessor(exporter), country="SE")
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return processor, exporter, provider


def test_a_trace_rolls_up_its_calls_measured_and_estimated_apart() -> None:
    processor, exporter, provider = setup()
    tracer = provider.get_tracer("agent")
    with Workflow("otel", echo=False) as wf, tracer.start_as_current_span("invoke_agent") as root:
        with tracer.start_as_current_span("chat llama-3.1-8b") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "llama-3.1-8b",
                    "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 50,
                }
            )
        with tracer.start_as_current_span("execute_tool search") as span:
            span.set_attributes(
                {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}
            )
        with tracer.start_as_current_span("chat proxied") as span:
            span.set_attributes(
                {
                    "gen_ai.system": "openai",
                    "gen_ai.response.model": "llama-3.1-70b",
                    "gen_ai.usage.prompt_tokens": 10,
                    "gen_ai.usage.completion_tokens": 5,
                    "greenml.proxy.energy_j": 12.5,
                    "greenml.proxy.uncertainty_j": 1.0,
                    "greenml.proxy.method": "counter",
                }
            )
        trace_id = root.get_span_context().trace_id
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {
        "invoke_agent",
        "chat llama-3.1-8b",
        "execute_tool search",
        "chat proxied",
    }
    estimated = spans["chat llama-3.1-8b"].attributes or {}
    assert estimated["greenml.energy.kind"] == "estimated"
    assert estimated["greenml.energy_j"] > 0 and "SE" in estimated["greenml.intensity_source"]
    assert estimated["greenml.co2eq_g"] > 0 and estimated["greenml.water_ml"] > 0
    measured = spans["chat proxied"].attributes or {}
    assert measured["greenml.energy.kind"] == "measured" and measured["greenml.energy_j"] == 12.5
    assert "greenml.energy_j" not in (spans["invoke_agent"].attributes or {})
    total = processor.trace_total(f"{trace_id:032x}")
    assert total is not None
    assert (total.measured.calls, total.estimated.calls, total.tool_calls) == (1, 1, 1)
    assert total.measured.energy_j == 12.5
    assert total.estimated.energy_j == pytest.approx(estimated["greenml.energy_j"])
    assert wf.total().measured.calls == 1 and wf.total().estimated.calls == 1
    block = processor.trace_block(trace_id)
    assert block is not None and block["calls"] == 2


def test_spans_without_usage_or_model_are_passed_on_untouched() -> None:
    processor, exporter, provider = setup()
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("chat") as span:
        span.set_attributes({"gen_ai.request.model": "m", "gen_ai.usage.input_tokens": "many"})
    [out] = exporter.get_finished_spans()
    assert "greenml.energy_j" not in (out.attributes or {})
    assert processor.trace_total(out.context.trace_id) is None
