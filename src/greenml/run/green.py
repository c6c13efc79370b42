"""``greenml run --when green``: plan the low-carbon start, wait for it, pause between chunks.

The plan itself is made in :mod:`greenml.schedule.green`; this module acts on
it: it waits (with a countdown on a terminal), then pauses the command's
process tree between planned chunks when the job may be interrupted (see
:mod:`greenml.run.pausing`), and puts the plan into the run record.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TYPE_CHECKING, Any

from greenml.accounting.run_accounting import prepare_accounting
from greenml.errors import ConfigError
from greenml.run.pausing import PauseSchedule, TickPauser
from greenml.run.waiting import Countdown, wait_until
from greenml.schedule.green import GreenRequest, make_plan

if TYPE_CHECKING:
    from greenml.run.runner import RunOptions
    from greenml.schedule.green import GreenPlan

__all__ = ["CLOCK", "SLEEP", "GreenRequest", "GreenRun", "announce", "start_green", "wait_for"]

# Injected in tests (a fake clock); wall-clock Unix seconds, the time plans are made in.
CLOCK = time.time
SLEEP = time.sleep


def start_green(request: GreenRequest, options: RunOptions, *, quiet: bool = False) -> GreenRun:
    """For ``greenml run --when green``: check the run can start, plan it, wait for its start.

    Raises:
        ConfigError: Bad options (a run option that needs ``--when green``, a
            command that is not found, bad accounting options) before any wait.
    """

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
