"""``greenml plan wait --until-green``: sleep until the planned low-carbon start, for shell scripts.

``greenml run --when green`` uses the same plan and wait (:mod:`greenml.run.green`).
"""

from __future__ import annotations

import click

from greenml.cli.options import (
    intensity_provider_option,
    intensity_trace_option,
    json_option,
    region_option,
    trace_renamed,
    zone_option,
)
from greenml.errors import ConfigError
from greenml.run import green
from greenml.store.export import json_text

__all__ = ["wait"]


@click.command(epilog="Example: greenml plan wait --until-green --deadline +12h --duration 4h "
               "--zone DE --intensity-trace de.csv && ./train.sh")  # fmt: skip
@click.option("--until-green", is_flag=True, help="Wait for the lowest-carbon start (required).")
@click.option("--deadline", metavar="TIME", help="The job must finish by then (ISO 8601, or +8h).")
@click.option("--duration", metavar="DURATION", help="How long the job runs (90m, 4h, 1d).")
@click.option("--earliest-start", metavar="TIME", help="Not before then (default: now).")
@zone_option()
@region_option()
@intensity_trace_option()
@trace_renamed
@intensity_provider_option
@click.option("--max-wait", metavar="DURATION", help="Start no later than this from now.")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit without waiting.")
@json_option("Print the plan as JSON on stdout.")
def wait(
    until_green: bool,
    deadline: str | None,
    duration: str | None,
    earliest_start: str | None,
    zone: str | None,
    region: str | None,
    intensity_trace: str | None,
    intensity_provider: str | None,
    max_wait: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Sleep until the planned low-carbon start, then exit 0 (Ctrl-C: exit 130)."""
    from greenml.schedule.green import GreenRequest, make_plan

    if not until_green:
        raise ConfigError("greenml plan wait needs --until-green (the only way to wait so far)")
    request = GreenRequest(
        deadline=deadline, duration=duration, earliest_start=earliest_start, zone=zone,
        region=region, intensity_trace=intensity_trace, intensity_provider=intensity_provider,
        max_wait=max_wait,
    )  # fmt: skip
    plan = make_plan(request, green.CLOCK())
    if as_json:
        print(json_text(plan.to_dict(), ensure_ascii=False, indent=2))
    green.announce(plan, dry_run=dry_run)
    if not dry_run:
        green.wait_for(plan)
