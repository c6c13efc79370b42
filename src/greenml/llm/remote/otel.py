"""An OpenTelemetry span processor giving GenAI spans an energy, CO2eq and water figure.

``GreenmlSpanProcessor(forward_to=BatchSpanProcessor(exporter))``: for each ended
span that describes a model call (:mod:`greenml.llm.remote.spans`), the call is
accounted (measured when a greenml proxy's figure rides along, else estimated),
collected per trace (a trace is a workflow: :meth:`trace_total`) and, when a
:class:`~greenml.llm.remote.Workflow` or ``greenml.Run`` is open where the span
ends, handed to it too. ``forward_to`` receives a copy of every span with the
``greenml.*`` attributes added (an ended span cannot be changed in place).

Do not also ``instrument()`` the client whose calls these spans trace: each call
would be counted twice.
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from greenml.llm.remote.calls import LlmCall, account
from greenml.llm.remote.collector import Collector, Total
from greenml.llm.remote.place import place_for
from greenml.llm.remote.spans import is_tool_span, span_call
from greenml.llm.remote.workflow import emit

log = logging.getLogger("greenml")
MAX_TRACES = 10_000


def call_attributes(call: LlmCall) -> dict[str, Any]:
    """The ``greenml.*`` attributes of an accounted call."""
    attrs: dict[str, Any] = {
        "greenml.energy_j": call.energy_j,
        "greenml.energy.uncertainty_j": call.uncertainty_j,
        "greenml.energy.kind": call.kind,
        "greenml.energy.basis": call.basis,
        "greenml.intensity_source": call.intensity_source,
    }
    if call.co2eq_g is not None:
        attrs["greenml.co2eq_g"] = call.co2eq_g
    if call.water_ml is not None:
        attrs["greenml.water_ml"] = call.water_ml
    return attrs


class GreenmlSpanProcessor(SpanProcessor):
    """Account GenAI spans; roll them up per trace.

    Args:
        forward_to: A processor (e.g. a ``BatchSpanProcessor``) that gets every span,
            GenAI spans with the ``greenml.*`` attributes added.
        region, country, ci: Where the providers serve (see :func:`instrument`).
        to_workflows: Also hand calls to an open Workflow / greenml.Run.
    """

    def __init__(
        self,
        forward_to: SpanProcessor | None = None,
        *,
        region: str | None = None,
        country: str | None = None,
        ci: float | None = None,
        to_workflows: bool = True,
    ) -> None:
        self._forward = forward_to
        self._region, self._country, self._ci = region, country, ci
        self._to_workflows = to_workflows
        self._traces: collections.OrderedDict[int, Collector] = collections.OrderedDict()
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._forward is not None:
            self._forward.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        out = span
        try:
            out = self._account(span)
        except Exception as exc:  # the traced program is sacred
            log.warning("greenml could not account span %r: %r", span.name, exc)
        if self._forward is not None:
            self._forward.on_end(out)

    def _account(self, span: ReadableSpan) -> ReadableSpan:
        attrs = dict(span.attributes or {})
        trace_id = span.context.trace_id if span.context is not None else 0
        duration_s = ((span.end_time or 0) - (span.start_time or 0)) / 1e9
        if is_tool_span(attrs):
            self._collector(trace_id).add_tool(
                str(attrs.get("gen_ai.tool.name") or span.name), duration_s
            )
            return span
        found = span_call(attrs)
        if found is None:
            return span
        place = place_for(found.provider, region=self._region, country=self._country, ci=self._ci)
        call = account(
            provider=found.provider,
            model=found.model,
            input_tokens=found.input_tokens,
            output_tokens=found.output_tokens,
            tokens_source="gen_ai.usage span attributes",
            energy=found.energy,
            place=place,
            started_s=(span.start_time or 0) / 1e9,
            duration_s=duration_s,
            trace_id=f"{trace_id:032x}",
        )
        self._collector(trace_id).add_call(call)
        if self._to_workflows:
            emit(call)
        return _with_attributes(span, call_attributes(call))

    def _collector(self, trace_id: int) -> Collector:
        with self._lock:
            collector = self._traces.get(trace_id)
            if collector is None:
                collector = self._traces[trace_id] = Collector(f"trace {trace_id:032x}")
                while len(self._traces) > MAX_TRACES:
                    self._traces.popitem(last=False)
            return collector

    def trace_total(self, trace_id: int | str) -> Total | None:
        """The roll-up of one trace (an int id or its 32 hex digits), ``None`` if unseen."""
        key = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
        with self._lock:
            collector = self._traces.get(key)
        return None if collector is None else collector.total()

    def trace_block(self, trace_id: int | str) -> dict[str, Any] | None:
        """A trace's roll-up as a ``workflow`` record block."""
        key = int(trace_id, 16) if isinstance(trace_id, str) else trace_id
        with self._lock:
            collector = self._traces.get(key)
        return None if collector is None else collector.block()

    def shutdown(self) -> None:
        if self._forward is not None:
            self._forward.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._forward.force_flush(timeout_millis) if self._forward is not None else True


def _with_attributes(span: ReadableSpan, extra: dict[str, Any]) -> ReadableSpan:
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes={**(span.attributes or {}), **extra},
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
