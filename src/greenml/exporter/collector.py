"""A Prometheus collector that reads :class:`LiveState`'s latest snapshot at scrape time.

A scrape reads cached values only; the sampling loop is what reads sensors.
The metric names and their DCGM-exporter counterparts are listed in
``deploy/METRICS.md``.

Lazy imports: prometheus_client, when metrics are collected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from greenml.exporter.state import LiveState, Snapshot

DEVICE_LABELS = ("host", "device", "component", "model", "method", "greenml_job")

# (metric name without _total, kind, help, DeviceState attribute)
DEVICE_METRICS: tuple[tuple[str, str, str, str], ...] = (
    ("greenml_device_power_watts", "gauge", "Latest power reading (W).", "power_w"),
    (
        "greenml_device_energy_joules",
        "counter",
        "Energy since the exporter started (J).",
        "energy_j",
    ),
    (
        "greenml_device_utilization_ratio",
        "gauge",
        "Fraction of time a kernel ran (0-1; NVML utilization).",
        "utilization",
    ),
    (
        "greenml_device_sm_activity_ratio",
        "gauge",
        "Fraction of SMs busy, averaged (0-1; NVML GPM).",
        "sm_activity",
    ),
    (
        "greenml_device_memory_used_bytes",
        "gauge",
        "Device memory in use (bytes).",
        "memory_used_bytes",
    ),
    (
        "greenml_emissions_grams",
        "counter",
        "Emissions of the device's energy since start (g CO2eq; IT energy, no PUE).",
        "emissions_g",
    ),
    (
        "greenml_cost_usd",
        "counter",
        "Electricity cost of the device's energy since start (USD).",
        "cost_usd",
    ),
)
INTENSITY_METRIC = "greenml_grid_intensity_grams_per_kwh"
INFO_LABELS = ("host", "greenml_job", "source", "location")

# every name a scrape may expose (counters get ``_total`` in the text format)
EXPOSED_NAMES = frozenset(
    [n + ("_total" if kind == "counter" else "") for n, kind, _, _ in DEVICE_METRICS]
    + [INTENSITY_METRIC]
)


class GreenmlCollector:
    """Builds the metric families from a :class:`LiveState` on every ``collect()``."""

    def __init__(self, state: LiveState, host: str, job: str) -> None:
        self._state = state
        self._host = host
        self._job = job

    def describe(self) -> list[Any]:
        """No up-front description: registering must not trigger a collect."""
        return []

    def collect(self) -> Iterator[Any]:
        """Metric families of the latest snapshot."""
        return iter(families(self._state.snapshot, self._host, self._job))


def families(snapshot: Snapshot, host: str, job: str) -> list[Any]:
    """The Prometheus metric families for one snapshot."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    out: list[Any] = []
    rows = [
        (
            (host, d.key, d.component, d.name, d.method or "-", job),
            d,
        )
        for d in snapshot.devices
    ]
    for name, kind, text, attribute in DEVICE_METRICS:
        cls = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        family = cls(name, text, labels=DEVICE_LABELS)
        seen = False
        for labels, device in rows:
            value = getattr(device, attribute)
            if value is not None:
                family.add_metric(labels, float(value))
                seen = True
        if seen:
            out.append(family)
    if snapshot.intensity_g_per_kwh is not None:
        gauge = GaugeMetricFamily(
            INTENSITY_METRIC, "Grid carbon intensity used (g CO2eq/kWh).", labels=INFO_LABELS
        )
        gauge.add_metric(
            (host, job, snapshot.intensity_source or "-", snapshot.intensity_location or "-"),
            snapshot.intensity_g_per_kwh,
        )
        out.append(gauge)
    return out
