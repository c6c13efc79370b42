"""``greenml wait --until-green``: sleep until the planned low-carbon start, for shell scripts.

``greenml run --when green`` uses the same plan (:func:`start_green`), then
runs and measures the command, pausing it between chunks when it may be
interrupted (see :mod:`greenml.schedule.pausing`).
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.runner import RunOptions
    from greenml.schedule.green import GreenPlan

from greenml.schedule.green import GreenRequest

__all__ = ["GreenRequest", "GreenRun", "start_green", "wait"]

# Injected in tests (a fake clock); wall-clock Unix seconds, the time plans are made in.
CLOCK = time.time
SLEEP = time.sleep


@click.command(epilog="Example: greenml wait --until-green --deadline +12h --duration 4h "
               "--zone DE --intensity-trace de.csv && ./train.sh")  # fmt: skip
@click.option("--until-green", is_flag=True, help="Wait for the lowest-carbon start (required).")
@click.option("--deadline", metavar="TIME", help="The job must finish by then (ISO 8601, or +8h).")
@click.option("--duration", metavar="DURATION", help="How long the job runs (90m, 4h, 1d).")
@click.option("--earliest-start", metavar="TIME", help="Not before then (default: now).")
@click.option("--zone", help="Grid zone (e.g. DE, US-CAL-CISO).")
@click.option("--region", help="Cloud region (e.g. europe-west3).")
@click.option(
    "--intensity-trace",
    "--trace",
    "intensity_trace",
    metavar="CSV",
    help="Intensity history or forecast for the zone (Electricity Maps export or time,g/kWh).",
)
@click.option(
    "--intensity-provider",
    metavar="NAME",
    help="A live provider with forecasts: electricitymaps, watttime, ukci.",
)
@click.option("--max-wait", metavar="DURATION", help="Start no later than this from now.")
@click.option("--dry-run", is_flag=True, help="Print the plan and exit without waiting.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON (stdout).")
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
        raise ConfigError("greenml wait needs --until-green (the only way to wait so far)")
    request = GreenRequest(
        deadline=deadline, duration=duration, earliest_start=earliest_start, zone=zone,
        region=region, intensity_trace=intensity_trace, intensity_provider=intensity_provider,
        max_wait=max_wait,
    )  # fmt: skip
    plan = make_plan(request, CLOCK())
    if as_json:
        print(json.dumps(plan.to_dict(), ensure_ascii=False, indent=2))
    announce(plan, dry_run=dry_run)
    if not dry_run:
        wait_for(plan)


def start_green(request: GreenRequest, options: RunOptions, *, quiet: bool = False) -> GreenRun:
    """For ``greenml run --when green``: check the run can start, plan it, wait for its start.

    Raises:
        ConfigError: Bad options (a run option that needs ``--when green``, a
            command that is not found, bad accounting options) before any wait.
    """
    import shutil

    from greenml.accounting.run_accounting import prepare_accounting
    from greenml.schedule.green import make_plan

    if request.when != "green":
        raise ConfigError(
            "--deadline, --duration, --earliest-start, --interruptible, --min-chunk and "
            "--max-pieces apply to --when green"
        )
    program = options.command[0] if options.command else ""
    if not program or shutil.which(program) is None:
        raise ConfigError(f"command not found: {program}")  # said now, not after the wait
    prepare_accounting(options.accounting)
    plan = make_plan(request, CLOCK())
    if not quiet:
        announce(plan)
    waited_s = wait_for(plan, quiet=quiet)
    return GreenRun(plan, waited_s)


def announce(plan: GreenPlan, *, dry_run: bool = False) -> None:
    """The plan on stderr: in full on a terminal or for a dry run, else one line."""
    now = CLOCK()
    full = dry_run or sys.stderr.isatty()
    for line in plan.describe(now, dry_run=dry_run) if full else [plan.headline(now)]:
        print(f"greenml: {line}", file=sys.stderr)


def wait_for(plan: GreenPlan, *, quiet: bool = False) -> float:
    """Sleep until the plan's start: a countdown on a terminal, else nothing more."""
    from greenml.schedule.waiting import Countdown, wait_until

    countdown = Countdown(plan.start_s, plan.countdown_detail()) if sys.stderr.isatty() else None
    if quiet:
        countdown = None
    try:
        return wait_until(
            plan.start_s, clock=CLOCK, sleep=SLEEP,
            on_tick=countdown.update if countdown else None,
        )  # fmt: skip
    finally:
        if countdown:
            countdown.clear()


class GreenRun:
    """A planned ``greenml run``: pauses the command between chunks, records the plan."""

    def __init__(self, plan: GreenPlan, waited_s: float) -> None:
        from greenml.schedule.pausing import PauseSchedule, TickPauser

        self.plan = plan
        self.waited_s = waited_s
        self.started_s = CLOCK()
        self.pauser = (
            TickPauser(PauseSchedule(plan.chunks_s), since_s=self.started_s, clock=CLOCK)
            if plan.interruptible and len(plan.chunks_s) > 1
            else None
        )

    def tick(self, inner: Any) -> Any:
        """``greenml run``'s once-a-second tick: follow the plan, then ``inner``."""

        def tick(meter: Any) -> None:
            if self.pauser is not None:
                self.pauser.poll()
            if inner is not None:
                inner(meter)

        return tick

    @property
    def block(self) -> dict[str, Any]:
        """The ``schedule`` block of the run record."""
        executed: dict[str, Any] = {"waited_s": self.waited_s, "started_at_s": self.started_s}
        if self.pauser is not None:
            executed.update(self.pauser.summary())
        return {**self.plan.to_dict(), "executed": executed}

    def attach(self, options: RunOptions) -> None:
        """Have the runner put the plan in the run record (``schedule``) before it is stored.

        The plan must be in the record when the run is stored and ledgered: a
        record changed afterwards would fail ``greenml ledger verify``.
        """
        options.extra = lambda: {"schedule": self.block}

    def finish(self) -> None:
        """The command has ended: never leave anything stopped."""
        if self.pauser is not None:
            self.pauser.release()

    def summarize(self) -> None:
        """One or two lines after the run's own summary."""
        for line in self.plan.summary_lines(self.block["executed"]):
            print(f"  {line}", file=sys.stderr)
