"""The machinery around one training run: interval cadence, signal guard, notice poller, exit.

The plain loop and the framework callbacks each own one :class:`Session`:
it installs the SIGTERM/SIGUSR1 handlers, starts the termination-notice
poller, counts work for the interval policy, and after an emergency
checkpoint logs what it cost against the budget and exits with
:data:`~greenml.resilience.signals.EXIT_REQUEUE`.

What interrupts a run and what happens then is one :class:`Interrupts`, which
:func:`~greenml.resilience.loop.resilient_steps` and the Lightning and Hugging
Face callbacks all take as ``interrupts=`` (beside ``policy=``)::

    resilient_steps(..., policy=Adaptive(30.0, 0.041), interrupts=Interrupts(notices="aws"))
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from greenml.errors import ConfigError
from greenml.resilience.cadence import Cadence
from greenml.resilience.notices import Notice, NoticePoller, NoticeSource, start_poller
from greenml.resilience.policy import IntervalPolicy
from greenml.resilience.signals import BUDGET_SIGNAL_S, EXIT_REQUEUE, InterruptGuard

log = logging.getLogger("greenml")


@dataclass(frozen=True)
class Interrupts:
    """What interrupts a run and what it does then; the defaults suit most jobs.

    Attributes:
        guard: An interrupt guard the caller installed and shares; by default
            the session makes one and installs it for SIGTERM and SIGUSR1.
        handle_signals: False to leave signal handlers alone (notices still work).
        budget_s: The emergency budget given to a signal.
        notices: ``"aws"``, ``"gcp"``, a notice source, or None for no polling.
        notice_interval_s: Seconds between two polls of the metadata service.
        exit_code: Exit status after an emergency checkpoint; None to stop
            (return, or stop training) instead.
        clock: A monotonic clock in seconds, used to count work.

    Raises:
        ConfigError: An exit code outside 1..255.
    """

    guard: InterruptGuard | None = None
    handle_signals: bool = True
    budget_s: float = BUDGET_SIGNAL_S
    notices: str | NoticeSource | None = None
    notice_interval_s: float = 5.0
    exit_code: int | None = EXIT_REQUEUE
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        if self.exit_code is not None and not 0 < self.exit_code < 256:
            raise ConfigError(f"the exit code must be in 1..255, not {self.exit_code}")


class Session:
    """Signals, notices and the checkpoint cadence of one run.

    Args:
        policy: The interval policy (a fixed 30 minutes of work by default).
        interrupts: Signals, notices, budget and exit code (:class:`Interrupts`'
            defaults when None).
    """

    def __init__(
        self, policy: IntervalPolicy | None = None, interrupts: Interrupts | None = None
    ) -> None:
        options = interrupts if interrupts is not None else Interrupts()
        guard = options.guard
        self.cadence = Cadence(policy, options.clock)
        self._owns_guard = guard is None
        self.guard = guard if guard is not None else InterruptGuard(budget_s=options.budget_s)
        self.handle_signals = options.handle_signals
        self.notices = options.notices
        self.notice_interval_s = options.notice_interval_s
        self.exit_code = options.exit_code
        self.poller: NoticePoller | None = None
        self._started = False

    @property
    def interrupted(self) -> bool:
        """Whether a signal or a notice asked the run to stop."""
        return self.guard.requested

    def start(self) -> None:
        """Install the handlers and start the poller (idempotent)."""
        if self._started:
            return
        if self._owns_guard and self.handle_signals:
            self.guard.install()
        self.poller = start_poller(self.notices, self._on_notice, self.notice_interval_s)
        self._started = True

    def stop(self) -> None:
        """Stop the poller and restore the handlers (idempotent)."""
        if self.poller is not None:
            self.poller.stop()
            self.poller = None
        if self._owns_guard and self._started:
            self.guard.close()
        self._started = False

    def _on_notice(self, notice: Notice) -> None:
        self.guard.request(notice.reason, notice.budget_s)

    def check_budget(self) -> None:
        """Warn when the last checkpoint took longer than the budget left (then try anyway)."""
        interruption = self.guard.interruption
        last = self.cadence.last_cost_s
        if interruption is not None and last is not None and last > interruption.remaining_s():
            log.warning(
                "the last checkpoint took %.1f s, more than the %.1f s left of the budget; "
                "trying anyway (a save cut short leaves the previous checkpoint valid)",
                last,
                interruption.remaining_s(),
            )

    def finish(self, step: int, saved: bool) -> None:
        """Report the emergency checkpoint, stop, and exit with :attr:`exit_code`."""
        interruption = self.guard.interruption
        reason = interruption.reason if interruption else "interruption"
        left = interruption.remaining_s() if interruption else float("nan")
        what = "emergency checkpoint of" if saved else "already checkpointed at"
        exit_text = f"exiting with {self.exit_code} (requeue)" if self.exit_code else "stopping"
        log.warning(
            "%s: %s step %d, %.1f s of the budget left; %s",
            reason,
            what,
            step,
            left,
            exit_text,
        )
        self.stop()
        if self.exit_code is not None:
            raise SystemExit(self.exit_code)
