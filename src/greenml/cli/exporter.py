"""``greenml exporter``: serve this machine's power, energy, carbon and cost to Prometheus."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import click

from greenml.measure.meter import Meter


def make_meter(interval_s: float) -> Meter:
    """The Meter the command measures with (tests replace this with fake sensors)."""
    return Meter(sample_hz=0, record_samples=True, sync_cuda=False)


@click.command()
@click.option(
    "--port", type=click.IntRange(1, 65535), default=9464, show_default=True, help="Port (1-65535)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--job", default="", help="Value of the greenml_job label.")
@click.option(
    "--interval", type=float, default=1.0, show_default=True, metavar="S", help="Sampling period."
)
@click.option("--zone", help="Grid zone (e.g. DE), for carbon intensity.")
@click.option("--region", help="Cloud region (e.g. us-central1), for carbon intensity.")
@click.option("--country", help="Country (ISO code), for a yearly average intensity.")
@click.option("--ci", type=float, metavar="G_PER_KWH", help="Fixed intensity (gCO2eq/kWh).")
@click.option("--price", type=float, metavar="USD_PER_KWH", help="Electricity price.")
@click.option("--duration", type=float, metavar="S", help="Stop after S seconds.")
def exporter(
    port: int,
    host: str,
    job: str,
    interval: float,
    zone: str | None,
    region: str | None,
    country: str | None,
    ci: float | None,
    price: float | None,
    duration: float | None,
) -> int:
    """Serve a Prometheus scrape endpoint (/metrics) until Ctrl-C or SIGTERM."""
    from greenml.accounting.location import resolve_intensity_source
    from greenml.errors import ConfigError
    from greenml.exporter import Exporter

    if not interval > 0:
        raise ConfigError(f"--interval must be > 0, got {interval}")
    if price is not None and price < 0:
        raise ConfigError(f"--price must be >= 0, got {price}")
    source, how = resolve_intensity_source(zone=zone, region=region, country=country, ci=ci)
    meter = make_meter(interval)
    try:
        with Exporter(
            meter, intensity=source, price_usd_per_kwh=price, job=job, interval_s=interval
        ) as exp:
            bound = exp.serve(host, port)
            print(f"greenml exporter: http://{host}:{bound}/metrics", file=sys.stderr)
            if source is None:
                print(f"greenml exporter: {how}", file=sys.stderr)
            _loop(exp, duration)
    finally:
        meter.close()
    return 0


def _loop(exp: Any, duration: float | None) -> None:
    """Tick until Ctrl-C, SIGTERM or the duration ends."""
    stop = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    timer = threading.Timer(max(0.0, duration or 0.0), stop.set)
    timer.daemon = True
    if duration is not None:
        timer.start()
    try:
        exp.run(stop)
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        timer.cancel()
