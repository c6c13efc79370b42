"""Checkpoint interval policies: fixed, Young/Daly, and adaptive (re-estimated online).

A policy answers one question, "how much work until the next checkpoint?", and
learns from what the loop tells it: how long each save took, how long the job
ran, and each interruption it survived.
"""

from __future__ import annotations

import math
from typing import Protocol

from greenml.errors import ConfigError
from greenml.resilience.interval import daly_interval_s


class IntervalPolicy(Protocol):
    """What the checkpoint loop and the spot simulator ask of a policy."""

    name: str

    def interval_s(self) -> float:
        """Seconds of work to do before the next checkpoint."""
        ...

    def record_checkpoint(self, cost_s: float) -> None:
        """A checkpoint took ``cost_s`` seconds of the loop's time."""
        ...

    def record_uptime(self, seconds: float) -> None:
        """The job ran ``seconds`` more without interruption."""
        ...

    def record_interruption(self) -> None:
        """The job was interrupted (and restarted)."""
        ...


class FixedInterval:
    """Checkpoint every ``every_s`` seconds, whatever happens."""

    name = "fixed"

    def __init__(self, every_s: float) -> None:
        if not (every_s > 0 and math.isfinite(every_s)):
            raise ConfigError(f"the checkpoint interval must be a positive time, not {every_s}")
        self.every_s = every_s

    def interval_s(self) -> float:
        return self.every_s

    def record_checkpoint(self, cost_s: float) -> None:
        pass  # a fixed interval ignores what it observes

    def record_uptime(self, seconds: float) -> None:
        pass

    def record_interruption(self) -> None:
        pass


class YoungDaly:
    """Daly's optimum for a known checkpoint cost and interruption rate."""

    name = "young-daly"

    def __init__(self, checkpoint_cost_s: float, interruptions_per_hour: float) -> None:
        if not interruptions_per_hour > 0:
            raise ConfigError(
                f"the interruption rate must be > 0 per hour, not {interruptions_per_hour}"
            )
        self.checkpoint_cost_s = checkpoint_cost_s
        self.interruptions_per_hour = interruptions_per_hour

    def interval_s(self) -> float:
        return daly_interval_s(self.checkpoint_cost_s, 3600.0 / self.interruptions_per_hour)

    def record_checkpoint(self, cost_s: float) -> None:
        pass

    def record_uptime(self, seconds: float) -> None:
        pass

    def record_interruption(self) -> None:
        pass


class Adaptive:
    """Daly's optimum from online estimates of the checkpoint cost and the rate.

    The cost is an exponentially weighted mean of measured saves (starting at
    ``initial_cost_s``); the rate is the posterior mean of a Gamma prior worth
    ``prior_hours`` of exposure at ``prior_per_hour``, updated with the
    interruptions seen over the hours run: (α₀ + n) / (β₀ + hours).
    """

    name = "adaptive"

    def __init__(
        self,
        initial_cost_s: float,
        prior_per_hour: float,
        prior_hours: float = 24.0,
        smoothing: float = 0.3,
    ) -> None:
        if not prior_per_hour > 0 or not prior_hours > 0:
            raise ConfigError("the prior rate and its weight in hours must both be > 0")
        if not 0 < smoothing <= 1:
            raise ConfigError(f"smoothing must be in (0, 1], not {smoothing}")
        self.cost_s = initial_cost_s
        self._alpha = prior_per_hour * prior_hours
        self._beta_h = prior_hours
        self._smoothing = smoothing

    @property
    def interruptions_per_hour(self) -> float:
        """The current estimate of the rate."""
        return self._alpha / self._beta_h

    def interval_s(self) -> float:
        return daly_interval_s(self.cost_s, 3600.0 / self.interruptions_per_hour)

    def record_checkpoint(self, cost_s: float) -> None:
        if cost_s > 0 and math.isfinite(cost_s):
            self.cost_s += self._smoothing * (cost_s - self.cost_s)

    def record_uptime(self, seconds: float) -> None:
        if seconds > 0:
            self._beta_h += seconds / 3600.0

    def record_interruption(self) -> None:
        self._alpha += 1.0

    def state_dict(self) -> dict[str, float]:
        """The online estimates, to keep in a checkpoint across restarts."""
        return {"cost_s": self.cost_s, "alpha": self._alpha, "beta_h": self._beta_h}

    def load_state_dict(self, state: dict[str, float]) -> None:
        """Resume the estimates saved by :meth:`state_dict`."""
        self.cost_s = float(state["cost_s"])
        self._alpha = float(state["alpha"])
        self._beta_h = float(state["beta_h"])
