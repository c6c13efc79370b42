"""When to checkpoint: count work seconds, ask the policy, tell it what was measured.

One :class:`Cadence` serves the plain loop and the Lightning and Hugging Face
callbacks alike. Work seconds are the time spent training since the last
checkpoint ended (checkpoint time itself is not work). Each save's blocking
cost — collecting the state and saving it, or only snapshotting it in
asynchronous mode — goes to ``policy.record_checkpoint``; run time goes to
``record_uptime``; a resume that did not start from a finished run counts as
one ``record_interruption``. A policy with ``state_dict``/``load_state_dict``
(the adaptive one) keeps its estimates in the checkpoint's manifest.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from greenml.resilience.policy import FixedInterval, IntervalPolicy

log = logging.getLogger("greenml")

DEFAULT_INTERVAL_S = 1800.0
POLICY_KEY = "policy"


def default_policy() -> IntervalPolicy:
    """A checkpoint every 30 minutes of work, the documented default."""
    return FixedInterval(DEFAULT_INTERVAL_S)


class Cadence:
    """Decides at each step boundary whether a checkpoint is due.

    Args:
        policy: The interval policy to follow and to feed.
        clock: A monotonic clock in seconds (tests pass a fake one).
    """

    def __init__(
        self, policy: IntervalPolicy | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.policy = policy if policy is not None else default_policy()
        self._clock = clock
        self._mark = clock()
        self._save_started: float | None = None
        self.checkpoints = 0
        self.last_cost_s: float | None = None

    def restart(self) -> None:
        """Start counting work now (after a resume or at the start of training)."""
        self._mark = self._clock()

    @property
    def work_s(self) -> float:
        """Seconds of work since the last checkpoint ended."""
        return self._clock() - self._mark

    def due(self) -> bool:
        """Whether the policy's interval of work has passed."""
        return self.work_s >= self.policy.interval_s()

    def save_starting(self) -> None:
        """Call right before collecting the state: closes the work segment."""
        now = self._clock()
        self.policy.record_uptime(now - self._mark)
        self._save_started = now

    def save_done(self) -> float:
        """Call once the caller is unblocked; returns and records the blocking cost."""
        now = self._clock()
        started = self._save_started if self._save_started is not None else now
        cost_s = now - started
        self.policy.record_checkpoint(cost_s)
        self.policy.record_uptime(cost_s)
        self._save_started = None
        self._mark = now
        self.checkpoints += 1
        self.last_cost_s = cost_s
        return cost_s

    def resumed(self, extra: dict[str, Any], *, interrupted: bool) -> None:
        """Reload the policy's estimates from a manifest's extra, count the interruption."""
        saved = extra.get(POLICY_KEY)
        loader = getattr(self.policy, "load_state_dict", None)
        if isinstance(saved, dict) and saved.get("name") == self.policy.name and loader:
            loader(saved["state"])
        if interrupted:
            self.policy.record_interruption()
        self.restart()

    def extra(self) -> dict[str, Any]:
        """What to keep in the next manifest's extra: the policy's estimates."""
        dump = getattr(self.policy, "state_dict", None)
        state = dump() if dump is not None else {}
        return {
            POLICY_KEY: {
                "name": self.policy.name,
                "interval_s": self.policy.interval_s(),
                "state": state,
            }
        }
