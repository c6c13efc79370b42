"""``greenml monitor``: a live view of power, utilization, SM activity and waste."""

from __future__ import annotations

import click

from greenml.cli.options import interval_renamed, sample_hz_option
from greenml.measure.meter import Meter


def make_meter() -> Meter:
    """The Meter the command reads (tests replace this with fake sensors)."""
    return Meter(sample_hz=0, record_samples=True, sync_cuda=False)


@click.command()
@sample_hz_option(1.0, "Samples (and redraws) per second.")
@interval_renamed
@click.option("--once", is_flag=True, help="Draw one frame and exit.")
@click.option("--frames", type=click.IntRange(min=1), metavar="N", help="Draw N frames and exit.")
def monitor(sample_hz: float, once: bool, frames: int | None) -> int:
    """Live table of every GPU and the CPU, with waste flags; Ctrl-C to quit."""
    from greenml.exporter.monitor import run_monitor

    meter = make_meter()
    try:
        run_monitor(meter, 1.0 / sample_hz, 1 if once else frames)
    except KeyboardInterrupt:
        pass
    finally:
        meter.close()
    return 0
