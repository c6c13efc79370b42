"""``greenml exporter``: serve this machine's power, energy, carbon and cost to Prometheus."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Any

import click

from greenml.cli.options import interval_renamed, location_options, price_option, sample_hz_option
from greenml.measure.meter import Meter


def make_meter(interval_s: float) -> Meter:
    """The Meter the command measures with (tests replace this with fake sensors)."""
    return Meter(sample_hz=0, record_samples=True, sync_cuda=False)


def make_pod_energy() -> Any:
    """GPU energy per pod over this machine's NVML (tests replace this with a fake NVML).

    Raises:
        SensorUnavailable: No NVML here.
    """
    import os

    from greenml.exporter.pods import PodGpuEnergy, PodResolver
    from greenml.measure.sensors.nvml import import_nvml

    resolver = PodResolver(os.environ.get("GREENML_PROC_ROOT", "/proc"),
                           os.environ.get("GREENML_CONTAINERS_DIR", "/var/log/containers"))
    return PodGpuEnergy(resolver, import_nvml())


@click.command()
@click.option(
    "--port", type=click.IntRange(1, 65535), default=9464, show_default=True, help="Port (1-65535)."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--job", default="", metavar="ID", help="Value of the greenml_job label.")
@sample_hz_option(1.0)
@interval_renamed
@location_options
@price_option
@click.option(
    "--duration", metavar="DURATION", help="Stop after this long (30s, 5m, 2h; default: Ctrl-C)."
)
@click.option(
    "--per-pod",
    is_flag=True,
    help="Also export GPU energy per Kubernetes pod (NVML processes → cgroups → pods; "
    "GREENML_PROC_ROOT, GREENML_CONTAINERS_DIR).",
)
def exporter(
    port: int,
    host: str,
    job: str,
    sample_hz: float,
    zone: str | None,
    region: str | None,
    country: str | None,
    ci: float | None,
    price: float | None,
    duration: str | None,
    per_pod: bool,
) -> int:
    """Serve a Prometheus scrape endpoint (/metrics) until Ctrl-C or SIGTERM."""
    from greenml.accounting.location import resolve_intensity_source
    from greenml.exporter import Exporter
    from greenml.schedule.timeparse import parse_duration_s

    duration_s = parse_duration_s(duration, "--duration") if duration is not None else None
    interval_s = 1.0 / sample_hz
    source, how = resolve_intensity_source(zone=zone, region=region, country=country, ci=ci)
    pods = make_pod_energy() if per_pod else None
    meter = make_meter(interval_s)
    try:
        with Exporter(
            meter, intensity=source, price_usd_per_kwh=price, job=job, interval_s=interval_s,
            pods=pods,
        ) as exp:  # fmt: skip
            bound = exp.serve(host, port)
            print(f"greenml exporter: http://{host}:{bound}/metrics", file=sys.stderr)
            if source is None:
                print(f"greenml exporter: {how}", file=sys.stderr)
            _loop(exp, duration_s)
    finally:
        meter.close()
    return 0


def _loop(exp: Any, duration_s: float | None) -> None:
    """Tick until Ctrl-C, SIGTERM or the duration ends."""
    stop = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    timer = threading.Timer(max(0.0, duration_s or 0.0), stop.set)
    timer.daemon = True
    if duration_s is not None:
        timer.start()
    try:
        exp.run(stop)
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        timer.cancel()
