"""Push a finished run's figures, for jobs that end before the next scrape.

Two opt-in sinks, called once when ``greenml run`` ends:

- the Prometheus **Pushgateway** (``--push-gateway URL``): prometheus-client's
  ``push_to_gateway``, grouped by ``greenml_job`` / ``run_id`` / ``node`` so that the
  nodes of one job do not overwrite each other;
- **OTLP** metrics over HTTP (``--otlp-endpoint URL``): the OpenTelemetry SDK
  (the ``otlp`` extra), one export of gauges, flushed before greenml exits.

The same figures go to both (:func:`run_figures`): energy per device (J, with
its method), the run's total energy, duration, CO2 (g) and cost (USD) where
known, labelled with the run, its name, job, node and node rank. A sink that
fails raises :class:`~greenml.errors.PushError`; ``greenml run`` prints it as a
warning and keeps the command's exit code.

Lazy imports: prometheus_client and opentelemetry, when a push is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenml.errors import PushError

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord

PUSH_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Figure:
    """One value to push: a metric name, its labels, the value and its help text."""

    name: str
    labels: dict[str, str]
    value: float
    help: str


def run_labels(record: RunRecord) -> dict[str, str]:
    """``run_id``, ``run_name``, and with a job: ``greenml_job``, ``node``, ``node_rank``."""
    job = record.job
    rank = None if job is None else job.node_rank
    return {
        "run_id": record.id, "run_name": record.name or "",
        "greenml_job": "" if job is None else job.job_id,
        "node": "" if job is None else job.node or "",
        "node_rank": "" if rank is None else str(rank),
    }  # fmt: skip


def run_figures(record: RunRecord) -> list[Figure]:
    """The figures of a run record worth pushing (unknown carbon or cost: left out)."""
    base = run_labels(record)
    out = [Figure("greenml_run_energy_joules", base, record.energy.total_j,
                  "Energy of the run (J).")]  # fmt: skip
    for component, block in record.energy.components.items():
        for device, d in block.devices.items():
            labels = {**base, "device": device, "component": component, "method": d.method}
            out.append(Figure("greenml_run_device_energy_joules", labels, d.energy_j,
                              "Energy of one device (J)."))  # fmt: skip
    if record.duration_s is not None:
        out.append(Figure("greenml_run_duration_seconds", base, record.duration_s,
                          "Duration of the run (s)."))  # fmt: skip
    if record.carbon is not None and record.carbon.kg is not None:
        out.append(Figure("greenml_run_co2_grams", base, record.carbon.kg * 1000,
                          "Emissions of the run (g CO2eq)."))  # fmt: skip
    if record.cost is not None and record.cost.usd is not None:
        out.append(Figure("greenml_run_cost_usd", base, record.cost.usd, "Cost of the run."))
    return out


def push_gateway(url: str, record: RunRecord, *, timeout_s: float = PUSH_TIMEOUT_S) -> None:
    """Push the run's figures to a Prometheus Pushgateway at ``url``.

    Raises:
        PushError: The gateway could not be reached or refused the push.
    """
    from prometheus_client import CollectorRegistry, Gauge, push_to_gateway

    figures = run_figures(record)
    registry = CollectorRegistry()
    gauges: dict[str, Any] = {}
    for f in figures:
        if f.name not in gauges:
            gauges[f.name] = Gauge(f.name, f.help, sorted(f.labels), registry=registry)
        gauges[f.name].labels(**f.labels).set(f.value)
    labels = run_labels(record)
    grouping = {"run_id": labels["run_id"]}
    if labels["node"]:
        grouping["node"] = labels["node"]
    job = labels["greenml_job"] or "greenml"
    try:
        push_to_gateway(url, job=job, registry=registry, grouping_key=grouping, timeout=timeout_s)
    except Exception as exc:  # urllib errors, a refused push: one message
        from greenml.store.url import mask_url

        raise PushError(f"Pushgateway {mask_url(url)}: push failed: {exc}") from None


def push_otlp(
    endpoint: str | None,
    record: RunRecord,
    *,
    exporter: Any = None,
    timeout_s: float = PUSH_TIMEOUT_S,
) -> None:
    """Export the run's figures once as OTLP metrics (HTTP, ``endpoint`` …/v1/metrics).

    ``exporter``: an OpenTelemetry ``MetricExporter`` to use instead of OTLP/HTTP.

    Raises:
        PushError: The SDK is not installed (extra ``otlp``), or the export failed.
    """
    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        raise PushError(
            "OTLP export needs the OpenTelemetry SDK: pip install 'greenml[otlp]'"
        ) from None
    if exporter is None:
        try:
            exporter = _checked_exporter(endpoint, timeout_s)
        except ImportError:
            raise PushError("OTLP export needs opentelemetry-exporter-otlp-proto-http "
                            "(pip install 'greenml[otlp]')") from None  # fmt: skip
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)
    resource = Resource.create({"service.name": "greenml", **_resource(record)})
    provider = MeterProvider(metric_readers=[reader], resource=resource)
    meter = provider.get_meter("greenml")
    gauges: dict[str, Any] = {}
    for f in run_figures(record):
        if f.name not in gauges:
            gauges[f.name] = meter.create_gauge(f.name, description=f.help)
        gauges[f.name].set(f.value, attributes={k: v for k, v in f.labels.items() if v})
    provider.shutdown(timeout_millis=timeout_s * 1000)  # the one collection and export
    failed = getattr(exporter, "failed", None)
    if failed:
        raise PushError(f"OTLP export to {endpoint or 'the exporter'} failed: {failed}")


def _resource(record: RunRecord) -> dict[str, str]:
    job = record.job
    out = {}
    if job is not None and job.node:
        out["host.name"] = job.node
    if job is not None and job.job_id:
        out["greenml.job"] = job.job_id
    return out


def _checked_exporter(endpoint: str | None, timeout_s: float) -> Any:
    """An OTLP/HTTP exporter that remembers a failed export (the SDK only logs it)."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.sdk.metrics.export import MetricExportResult

    class Checked(OTLPMetricExporter):  # type: ignore[misc]
        failed: str | None = None

        def export(
            self, metrics_data: Any, timeout_millis: float | None = 10_000, **kw: Any
        ) -> Any:
            result = super().export(metrics_data, timeout_millis=timeout_millis, **kw)
            if result != MetricExportResult.SUCCESS:
                self.failed = "the collector did not accept the metrics"
            return result

    return Checked(endpoint=endpoint, timeout=timeout_s)


def push_all(record: RunRecord, gateways: Sequence[str], otlp: Sequence[str]) -> list[str]:
    """Push to every sink asked for; the warnings of those that failed (never raises)."""
    warnings = []
    for url in gateways:
        try:
            push_gateway(url, record)
        except PushError as exc:
            warnings.append(str(exc))
    for endpoint in otlp:
        try:
            push_otlp(endpoint, record)
        except PushError as exc:
            warnings.append(str(exc))
    return warnings
