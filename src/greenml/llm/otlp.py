"""The proxy's figures as OTLP metrics (``--otlp-endpoint``): what ``/metrics`` shows Prometheus,
pushed to an OpenTelemetry collector every ``every_s`` and once more at shutdown.

Counters (cumulative): ``greenml.llm.energy`` in J by model, tenant and phase
(prefill, decode), ``greenml.llm.idle_energy`` in J, ``greenml.llm.requests`` by
model, tenant and status, ``greenml.llm.tokens`` by model, tenant and kind (prompt,
completion). The resource names the service ``greenml-llm-proxy`` and the energy
method and scope, so a reader knows what was measured. Added to by the ticker thread.

Lazy imports: the OpenTelemetry SDK and exporter (the ``otlp`` extra), at construction.
"""

from __future__ import annotations

from typing import Any

from greenml.errors import ConfigError


class OtlpMetrics:
    """Counters exported to ``endpoint`` (OTLP/HTTP, …/v1/metrics).

    Raises:
        ConfigError: The ``otlp`` extra is not installed.
    """

    def __init__(self, endpoint: str, method: str, scope: str, every_s: float = 30.0) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                OTLPMetricExporter,
            )
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
            from opentelemetry.sdk.resources import Resource
        except ImportError:
            raise ConfigError(
                "--otlp-endpoint needs the otlp extra: pip install 'greenml[otlp]'"
            ) from None
        reader = PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=endpoint, timeout=10), export_interval_millis=every_s * 1000
        )
        resource = Resource.create({"service.name": "greenml-llm-proxy",
                                    "greenml.energy.method": method,
                                    "greenml.energy.scope": scope[:500]})  # fmt: skip
        self._provider = MeterProvider(metric_readers=[reader], resource=resource)
        meter = self._provider.get_meter("greenml.llm")
        counter = meter.create_counter
        self._energy = counter("greenml.llm.energy", "J", "Energy attributed to requests")
        self._idle = counter("greenml.llm.idle_energy", "J", "Energy with no request in flight")
        self._requests = meter.create_counter(
            "greenml.llm.requests", description="Requests settled"
        )
        self._tokens = meter.create_counter("greenml.llm.tokens", description="Tokens")

    def settled(self, row: dict[str, Any]) -> None:
        """A settled request's row (:func:`greenml.llm.records.request_row`)."""
        who = {"model": row.get("model") or "", "tenant": row.get("tenant") or ""}
        self._energy.add(row["prefill_j"], {**who, "phase": "prefill"})
        self._energy.add(max(0.0, row["energy_j"] - row["prefill_j"]), {**who, "phase": "decode"})
        self._requests.add(1, {**who, "status": row["status"]})
        self._tokens.add(row.get("prompt_tokens") or 0, {**who, "kind": "prompt"})
        self._tokens.add(row.get("completion_tokens") or 0, {**who, "kind": "completion"})

    def idle(self, energy_j: float) -> None:
        self._idle.add(max(0.0, energy_j))

    def close(self) -> None:
        """Export what is left and stop."""
        self._provider.shutdown(timeout_millis=10_000)
