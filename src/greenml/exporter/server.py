"""The exporter: a sampling loop over a Meter and an HTTP scrape endpoint.

Lazy imports: prometheus_client and the HTTP server, when the exporter starts.
"""

from __future__ import annotations

import errno
import socket
import threading
from typing import Any

from greenml.accounting.intensity import IntensitySource
from greenml.errors import ConfigError
from greenml.exporter.collector import GreenmlCollector
from greenml.exporter.pods import PodCollector, PodGpuEnergy
from greenml.exporter.state import LiveState
from greenml.measure.meter import Meter


class Exporter:
    """Serves a Meter's devices, intensity, emissions and cost to Prometheus.

    Args:
        meter: A Meter opened with ``record_samples=True`` (gauges come from its samples).
        intensity: Grid intensity source; ``None`` exposes no intensity or emissions.
        price_usd_per_kwh: Electricity price; ``None`` exposes no cost.
        job: Value of the ``greenml_job`` label.
        host: Value of the ``host`` label (default: this machine's hostname).
        interval_s: Period of the sampling loop in :meth:`run`.
        sample: Whether the loop reads the sensors itself (``meter.sample_now()``);
            leave it on for a Meter built with ``sample_hz=0``.
        render_max_age_s: A rendering of ``/metrics`` is reused by the scrapes
            within this long after it, until the next tick (0: every scrape renders,
            though concurrent ones still share one).
        pods: GPU energy per Kubernetes pod (:mod:`greenml.exporter.pods`), updated
            each tick and exported with pod, namespace and container labels.
    """

    def __init__(
        self,
        meter: Meter,
        *,
        intensity: IntensitySource | None = None,
        price_usd_per_kwh: float | None = None,
        job: str = "",
        host: str | None = None,
        interval_s: float = 1.0,
        sample: bool = True,
        render_max_age_s: float = 0.1,
        pods: PodGpuEnergy | None = None,
    ) -> None:
        from prometheus_client import CollectorRegistry

        from greenml.exporter.endpoint import SharedRender

        if not interval_s > 0:
            raise ConfigError(f"the interval must be > 0 s, got {interval_s}")
        if not render_max_age_s >= 0:
            raise ConfigError(f"render_max_age_s must be >= 0, got {render_max_age_s}")
        self.meter = meter
        self.interval_s = interval_s
        self._sample = sample
        self.state = LiveState(meter, intensity, price_usd_per_kwh)
        self.collector = GreenmlCollector(self.state, host or socket.gethostname(), job)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)  # type: ignore[arg-type]
        self.pods = pods
        if pods is not None:
            collector = PodCollector(pods, host or socket.gethostname(), job)
            self.registry.register(collector)  # type: ignore[arg-type]
        self.renders = SharedRender(render_max_age_s)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def step(self) -> None:
        """One tick of the loop: read the sensors (if asked) and refresh the state.

        The metric figures are built from the tick when a scrape asks for them
        (:meth:`LiveState.tick`), not at every tick; with pods, at every tick.
        """
        if self._sample:
            self.meter.sample_now()
        if self.pods is not None:
            snapshot = self.state.update()
            self.pods.update({d.key: d.energy_j for d in snapshot.devices if d.component == "gpu"})
        else:
            self.state.tick()
        self.renders.invalidate()

    def run(self, stop: threading.Event) -> None:
        """Tick every ``interval_s`` until ``stop`` is set."""
        while not stop.wait(self.interval_s):
            self.step()

    def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 9464,
        *,
        workers: int = 8,
        timeout_s: float = 5.0,
    ) -> int:
        """Start the scrape endpoint in a daemon thread; return the bound port.

        ``/metrics`` serves the registry, ``/`` an index, other paths 404.
        ``workers`` threads answer requests (never more); a connection silent
        for ``timeout_s`` is closed (see :mod:`greenml.exporter.endpoint`).

        Raises:
            ConfigError: The port is out of range or taken, or the address cannot be bound.
        """
        from greenml.exporter.endpoint import ScrapeHandler, ScrapeServer

        if not 0 <= port <= 65535:
            raise ConfigError(f"port must be 0-65535, got {port}")
        if workers < 1 or not timeout_s > 0:
            raise ConfigError(f"need workers >= 1 and timeout_s > 0, got {workers}, {timeout_s}")
        handler = ScrapeHandler.factory(self.registry, self.renders)
        try:
            server = ScrapeServer((host, port), handler, workers=workers, timeout_s=timeout_s)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is already in use") from None
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="greenml-exporter", daemon=True
        )
        self._thread.start()
        return int(server.server_address[1])

    def close(self) -> None:
        """Stop the endpoint (the Meter stays open: its owner closes it)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Exporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
