"""The interrupt guard in this process: real signals, handler restore, chaining, budgets."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType

import pytest

from greenml.errors import ConfigError
from greenml.resilience.signals import (
    BUDGET_SIGNAL_S,
    EXIT_REQUEUE,
    InterruptGuard,
)


def _deliver(sig: int) -> None:
    """Send a signal to ourselves; Python runs the handler at the next bytecode boundary."""
    os.kill(os.getpid(), sig)
    time.sleep(0.01)


def test_requeue_exit_code_is_ex_tempfail() -> None:
    assert EXIT_REQUEUE == 75


def test_a_real_signal_files_a_request_and_close_restores_the_handler() -> None:
    before = signal.getsignal(signal.SIGUSR1)
    guard = InterruptGuard().install()
    try:
        assert not guard.requested
        _deliver(signal.SIGUSR1)
        assert guard.requested
        interruption = guard.interruption
        assert interruption is not None and interruption.reason == "SIGUSR1"
        assert interruption.budget_s == BUDGET_SIGNAL_S
        assert 0 < interruption.remaining_s() <= BUDGET_SIGNAL_S
        assert interruption.received_at.tzinfo is not None
    finally:
        guard.close()
    assert signal.getsignal(signal.SIGUSR1) == before


def test_the_earliest_deadline_wins() -> None:
    guard = InterruptGuard(signals=(), budget_s=120.0)
    guard.request("aws terminate notice")
    guard.request("gcp preempted notice", budget_s=30.0)
    guard.request("a late, generous one", budget_s=500.0)
    assert guard.interruption is not None
    assert guard.interruption.reason == "gcp preempted notice"
    assert guard.interruption.budget_s == 30.0


def test_a_previous_python_handler_is_chained_and_gets_the_signal_after_close() -> None:
    calls: list[int] = []

    def framework_handler(signum: int, frame: FrameType | None) -> None:
        calls.append(signum)

    original = signal.signal(signal.SIGUSR1, framework_handler)
    try:
        guard = InterruptGuard(signals=(signal.SIGUSR1,)).install()
        _deliver(signal.SIGUSR1)
        assert guard.requested and calls == [signal.SIGUSR1]
        # A framework that restores "its original" handler puts ours back behind our back:
        guard.close()
        signal.signal(signal.SIGUSR1, guard._handle)
        _deliver(signal.SIGUSR1)
        assert calls == [signal.SIGUSR1, signal.SIGUSR1]  # a closed guard only passes it on
    finally:
        signal.signal(signal.SIGUSR1, original)


def test_install_outside_the_main_thread_is_refused() -> None:
    errors: list[BaseException] = []

    def install() -> None:
        try:
            InterruptGuard().install()
        except ConfigError as exc:
            errors.append(exc)

    thread = threading.Thread(target=install)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "main thread" in str(errors[0])


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="budget must be > 0"):
        InterruptGuard(budget_s=0)
