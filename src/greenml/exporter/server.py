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
    ) -> None:
        from prometheus_client import CollectorRegistry

        if not interval_s > 0:
            raise ConfigError(f"the interval must be > 0 s, got {interval_s}")
        self.meter = meter
        self.interval_s = interval_s
        self._sample = sample
        self.state = LiveState(meter, intensity, price_usd_per_kwh)
        self.collector = GreenmlCollector(self.state, host or socket.gethostname(), job)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)  # type: ignore[arg-type]
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def step(self) -> None:
        """One tick of the loop: read the sensors (if asked) and refresh the state."""
        if self._sample:
            self.meter.sample_now()
        self.state.update()

    def run(self, stop: threading.Event) -> None:
        """Tick every ``interval_s`` until ``stop`` is set."""
        while not stop.wait(self.interval_s):
            self.step()

    def serve(self, host: str = "127.0.0.1", port: int = 9464) -> int:
        """Start the scrape endpoint in a daemon thread; return the bound port.

        Raises:
            ConfigError: The port is taken or the address cannot be bound.
        """
        from http.server import ThreadingHTTPServer

        from prometheus_client.exposition import MetricsHandler

        handler = type("_Handler", (_Quiet, MetricsHandler.factory(self.registry)), {})
        try:
            server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is already in use") from None
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
        server.daemon_threads = True
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


class _Quiet:
    """Mixin: no access log on stderr."""

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing."""
