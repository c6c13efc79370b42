"""The energy–time trade-off every optimizer here minimizes (Zeus, NSDI'23).

cost = η·E + (1 − η)·P_max·T: η = 1 minimizes energy alone, η = 0 time alone;
P_max (the largest power limit of the GPU) turns seconds into joules so the two
terms share a unit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from greenml.errors import ConfigError


def check_eta(eta: float) -> float:
    """``eta`` if it lies in [0, 1]; ConfigError otherwise."""
    if not (0.0 <= eta <= 1.0) or math.isnan(eta):
        raise ConfigError(f"eta must be between 0 and 1, not {eta}")
    return eta


def energy_time_cost(energy_j: float, time_s: float, eta: float, max_power_w: float) -> float:
    """Zeus's cost of spending ``energy_j`` over ``time_s`` (in joules)."""
    return eta * energy_j + (1.0 - eta) * max_power_w * time_s


@dataclass(frozen=True)
class LimitProfile:
    """What one power limit gave over the profiled steps of one device (or all ranks).

    Attributes:
        power_limit_w: The limit in force.
        time_s: Time of the profiled work (per step, per epoch ...).
        energy_j: Energy of that same work.
    """

    power_limit_w: float
    time_s: float
    energy_j: float

    @property
    def power_w(self) -> float:
        """Mean power over the profiled work."""
        return self.energy_j / self.time_s if self.time_s > 0 else 0.0


def pick_power_limit(
    profiles: Sequence[LimitProfile],
    eta: float,
    max_power_w: float,
    max_slowdown: float | None = None,
) -> LimitProfile:
    """The profile of least cost, or of least energy within a slowdown.

    Args:
        profiles: One per profiled limit, all for the same amount of work.
        eta: Weight of energy against time, in [0, 1].
        max_power_w: The device's largest allowed power limit.
        max_slowdown: When given (0.05 = 5 %), minimize energy among the limits
            whose time is at most (1 + max_slowdown) × the fastest one; ``eta``
            is then ignored.

    Raises:
        ConfigError: No profiles, or a negative slowdown.
    """
    if not profiles:
        raise ConfigError("no power limit was profiled")
    if max_slowdown is not None:
        if max_slowdown < 0 or math.isnan(max_slowdown):
            raise ConfigError(f"the allowed slowdown must be >= 0, not {max_slowdown}")
        fastest_s = min(p.time_s for p in profiles)
        allowed = [p for p in profiles if p.time_s <= fastest_s * (1.0 + max_slowdown)]
        return min(allowed, key=lambda p: (p.energy_j, -p.power_limit_w))
    check_eta(eta)
    return min(
        profiles,
        key=lambda p: (energy_time_cost(p.energy_j, p.time_s, eta, max_power_w), -p.power_limit_w),
    )
