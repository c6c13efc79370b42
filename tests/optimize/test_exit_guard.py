"""ExitGuard in-process: handlers chained and put back, SIGTERM ignored stays ignored."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest

from greenml.optimize.exit_guard import ExitGuard


@pytest.fixture(autouse=True)
def _keep_sigterm() -> Iterator[None]:
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def test_sigterm_runs_the_action_then_the_previous_handler() -> None:
    calls: list[str] = []

    def previous(signum: int, frame: FrameType | None) -> None:
        calls.append("previous")

    signal.signal(signal.SIGTERM, previous)
    guard = ExitGuard(lambda: calls.append("restore"))
    guard.install()
    signal.raise_signal(signal.SIGTERM)
    assert calls == ["restore", "previous"]
    assert signal.getsignal(signal.SIGTERM) is previous  # ours is gone
    guard.run()  # once only
    assert calls == ["restore", "previous"]


def test_uninstall_puts_the_previous_handler_back() -> None:
    def previous(signum: int, frame: FrameType | None) -> None:
        pass

    signal.signal(signal.SIGTERM, previous)
    guard = ExitGuard(lambda: None)
    guard.install()
    assert signal.getsignal(signal.SIGTERM) is not previous
    guard.uninstall()
    assert signal.getsignal(signal.SIGTERM) is previous


def test_an_ignored_sigterm_stays_ignored() -> None:
    ran: list[bool] = []
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    guard = ExitGuard(lambda: ran.append(True))
    guard.install()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    signal.raise_signal(signal.SIGTERM)
    assert ran == []
    guard.uninstall()


def test_a_failing_action_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> None:
        raise RuntimeError("NVML gone")

    ExitGuard(broken, "restoring GPU power limits").run()
    assert "restoring GPU power limits failed: NVML gone" in caplog.text
