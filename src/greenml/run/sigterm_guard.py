"""Catch SIGTERM while a run is open, so it is stored before the program dies of it.

Only when nothing else handles SIGTERM (the default action) and only from the main
thread; the previous handler comes back when the run ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from typing import Any


class SigtermGuard:
    """Calls ``on_term(signum)`` on SIGTERM, then lets the signal kill the process.

    Args:
        on_term: Ends the run (store it) before the process dies of the signal.
    """

    def __init__(self, on_term: Callable[[int], None]) -> None:
        self._on_term = on_term
        self._previous: Any = None

    def catch(self) -> None:
        """Install the handler when SIGTERM has its default action (main thread only)."""
        if threading.current_thread() is not threading.main_thread():
            return
        with contextlib.suppress(Exception):
            if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
                self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    def release(self) -> None:
        """Put the previous handler back, unless someone replaced ours since."""
        if self._previous is not None:
            with contextlib.suppress(Exception):
                if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                    signal.signal(signal.SIGTERM, self._previous)
            self._previous = None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self._previous = None
        self._on_term(signum)
        os.kill(os.getpid(), signum)  # die of it, as the program would have
