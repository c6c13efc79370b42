"""Run a clean-up action at exit and on SIGTERM, keeping the program's own behaviour.

On SIGTERM the action runs, then the handler that was there before runs (a
Python handler is called; the default one is re-installed and the signal sent
again), so the program exits as it would have, with the signal's status. A
program that ignores SIGTERM keeps ignoring it and nothing is run.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger(__name__)


class ExitGuard:
    """Calls ``action`` once: at interpreter exit or on SIGTERM, whichever comes first.

    Args:
        action: The clean-up; it must not raise (failures are logged).
        name: What the action is, for log lines.
    """

    def __init__(self, action: Callable[[], None], name: str = "clean-up") -> None:
        self._action = action
        self._name = name
        self._done = False
        self._installed = False
        self._previous: Any = None
        self._handler_set = False

    def install(self) -> None:
        """Register at exit and, from the main thread, for SIGTERM."""
        if self._installed:
            return
        self._installed = True
        atexit.register(self.run)
        if threading.current_thread() is not threading.main_thread():
            log.warning(
                "greenml: %s is not installed for SIGTERM (not on the main thread); "
                "it still runs at exit", self._name,
            )  # fmt: skip
            return
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN:
            return  # the program survives SIGTERM: nothing to clean up then
        self._previous = previous
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self._handler_set = True

    def uninstall(self) -> None:
        """Unregister; put the previous SIGTERM handler back if ours is still in place."""
        if not self._installed:
            return
        self._installed = False
        atexit.unregister(self.run)
        if self._handler_set:
            self._handler_set = False
            if threading.current_thread() is threading.main_thread():
                current = signal.getsignal(signal.SIGTERM)
                if current == self._on_sigterm:
                    signal.signal(signal.SIGTERM, _handler(self._previous))

    def run(self) -> None:
        """The action, once."""
        if self._done:
            return
        self._done = True
        try:
            self._action()
        except Exception as exc:  # at exit or in a signal handler: report, never raise
            log.error("greenml: %s failed: %s", self._name, exc)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.run()
        previous = self._previous
        self.uninstall()
        if callable(previous):
            previous(signum, frame)
            return
        signal.signal(signum, signal.SIG_DFL)  # the default action: terminate
        os.kill(os.getpid(), signum)


def _handler(previous: Any) -> Any:
    """A value ``signal.signal`` accepts (None: set outside Python → default)."""
    return signal.SIG_DFL if previous is None else previous
