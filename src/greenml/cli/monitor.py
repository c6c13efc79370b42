"""``greenml monitor``: a live view of power, utilization, SM activity and waste."""

from __future__ import annotations

import click

from greenml.measure.meter import Meter


def make_meter() -> Meter:
    """The Meter the command reads (tests replace this with fake sensors)."""
    return Meter(sample_hz=0, record_samples=True, sync_cuda=False)


@click.command()
@click.option(
    "--interval", type=float, default=1.0, show_default=True, metavar="S", help="Refresh period."
)
@click.option("--once", is_flag=True, help="Draw one frame and exit.")
@click.option("--frames", type=click.IntRange(min=1), metavar="N", help="Draw N frames and exit.")
def monitor(interval: float, once: bool, frames: int | None) -> int:
    """Live table of every GPU and the CPU, with waste flags; Ctrl-C to quit."""
    from greenml.errors import ConfigError
    from greenml.exporter.monitor import run_monitor

    if not interval > 0:
        raise ConfigError(f"--interval must be > 0, got {interval}")
    meter = make_meter()
    try:
        run_monitor(meter, interval, 1 if once else frames)
    except KeyboardInterrupt:
        pass
    finally:
        meter.close()
    return 0
