"""Interruption requests: SIGTERM, SIGUSR1 and cloud termination notices.

An :class:`InterruptGuard` installs handlers for SIGTERM (Kubernetes, Docker,
``scancel``, spot reclaims) and SIGUSR1 (SLURM's ``--signal=USR1@<seconds>``)
that only record the request; the training loop sees it at the next step
boundary, takes an emergency checkpoint within the time budget, and exits
with :data:`EXIT_REQUEUE`. Termination-notice pollers
(:mod:`greenml.resilience.notices`) file the same request from their thread.

Exit code:
    ``EXIT_REQUEUE = 75`` (``EX_TEMPFAIL`` in sysexits.h: "temporary failure,
    the user is invited to retry"). It means: the job stopped cleanly on an
    interruption after writing its checkpoint; run it again and it resumes.
    In a SLURM batch script::

        python train.py; rc=$?
        if [ $rc -eq 75 ]; then scontrol requeue "$SLURM_JOB_ID"; fi
        exit $rc

    A Kubernetes Job can match it in ``podFailurePolicy`` (``onExitCodes``).

Budgets (time from the request to the end of the emergency checkpoint):
    AWS gives two minutes between the spot notice and the reclaim
    (:data:`BUDGET_AWS_S` = 120 s), GCP 30 s between the preemption notice and
    the stop (:data:`BUDGET_GCP_S`); a signal gets :data:`BUDGET_SIGNAL_S` = 30 s
    (Kubernetes' default grace period) unless told otherwise.

Handlers are restored on :meth:`InterruptGuard.close`. A guard that is closed
while its handler is still installed (a framework restored it behind our
back) passes the signal on to the handler it replaced.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from types import FrameType, TracebackType
from typing import Any

from greenml.errors import ConfigError

log = logging.getLogger("greenml")

EXIT_REQUEUE = 75
BUDGET_AWS_S = 120.0
BUDGET_GCP_S = 30.0
BUDGET_SIGNAL_S = 30.0
DEFAULT_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGUSR1)

_Handler = Callable[[int, FrameType | None], Any] | int | None


@dataclass(frozen=True)
class Interruption:
    """One request to stop: why, when, and how long the emergency checkpoint may take.

    Attributes:
        reason: ``SIGTERM``, ``SIGUSR1``, or a notice such as ``aws spot terminate``.
        received_at: When it arrived (UTC).
        deadline_s: ``time.monotonic()`` value by which the checkpoint must be done.
        budget_s: The budget it came with.
    """

    reason: str
    received_at: datetime
    deadline_s: float
    budget_s: float

    def remaining_s(self, now_s: float | None = None) -> float:
        """Seconds left of the budget (negative once overrun)."""
        return self.deadline_s - (time.monotonic() if now_s is None else now_s)


class InterruptGuard:
    """Turns SIGTERM/SIGUSR1 and notices into one interruption request.

    Args:
        signals: Signals to handle (SIGTERM and SIGUSR1 by default).
        budget_s: The budget given to a signal.
    """

    def __init__(
        self,
        signals: Iterable[int] = DEFAULT_SIGNALS,
        budget_s: float = BUDGET_SIGNAL_S,
    ) -> None:
        if not budget_s > 0:
            raise ConfigError(f"the emergency checkpoint budget must be > 0 s, not {budget_s}")
        self.signals = tuple(signal.Signals(s) for s in signals)
        self.budget_s = budget_s
        # Re-entrant: a handler may run while the main thread holds the lock.
        self._lock = threading.RLock()
        self._interruption: Interruption | None = None
        self._previous: dict[signal.Signals, _Handler] = {}
        self._closed = False

    @property
    def requested(self) -> bool:
        """Whether an interruption was requested."""
        return self._interruption is not None

    @property
    def interruption(self) -> Interruption | None:
        """The earliest-deadline request received, if any."""
        return self._interruption

    def install(self) -> InterruptGuard:
        """Install the handlers (main thread only); returns ``self``.

        Raises:
            ConfigError: Called outside the main thread, where Python cannot set handlers.
        """
        if threading.current_thread() is not threading.main_thread():
            raise ConfigError(
                "signal handlers can only be installed from the main thread; "
                "create the guard there, or pass Interrupts(handle_signals=False) "
                "and rely on notices"
            )
        for sig in self.signals:
            if not self.owns(signal.getsignal(sig)):  # installing twice keeps the first previous
                self._previous[sig] = signal.signal(sig, self._handle)
        self._closed = False
        return self

    def request(self, reason: str, budget_s: float | None = None) -> None:
        """Ask for an emergency checkpoint and exit (thread-safe, signal-safe)."""
        budget = self.budget_s if budget_s is None else max(0.0, budget_s)
        now = time.monotonic()
        new = Interruption(reason, datetime.now(timezone.utc), now + budget, budget)
        with self._lock:
            current = self._interruption
            if current is None or new.deadline_s < current.deadline_s:
                self._interruption = new
        if current is None:
            log.warning("%s received: emergency checkpoint within %.0f s", reason, budget)

    def owns(self, handler: object) -> bool:
        """Whether ``handler`` is this guard's signal handler."""
        return bool(handler == self._handle)

    def previous(self, sig: int) -> _Handler:
        """The handler that :meth:`install` replaced for ``sig`` (``SIG_DFL`` if none)."""
        previous = self._previous.get(signal.Signals(sig), signal.SIG_DFL)
        return previous if previous is not None else signal.SIG_DFL

    def close(self) -> None:
        """Restore the handlers that were in place before :meth:`install`."""
        self._closed = True
        for sig, previous in self._previous.items():
            if signal.getsignal(sig) == self._handle:
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)

    def __enter__(self) -> InterruptGuard:
        return self.install()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._closed:
            self._pass_on(signum, frame)
            return
        self.request(signal.Signals(signum).name)
        previous = self._previous.get(signal.Signals(signum))
        if callable(previous):  # chain a framework's own handler (e.g. Lightning's)
            previous(signum, frame)

    def _pass_on(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous.get(signal.Signals(signum), signal.SIG_DFL)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL or previous is None:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
