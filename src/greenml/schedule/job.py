"""A job to place in time and space: how long it runs, when it may, and how it may be cut.

Times are timezone-aware and normalised to UTC; durations are seconds. A job
that cannot finish by its deadline is refused at construction, with the
earliest deadline that would work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from greenml.errors import ConfigError
from greenml.quantities import J_PER_KWH as JOULES_PER_KWH


@dataclass(frozen=True)
class Job:
    """What the planner places.

    Attributes:
        duration_s: Run time in seconds (> 0).
        earliest_start: The job may not start before this (tz-aware; stored as UTC).
        deadline: The job must be finished by this (tz-aware; stored as UTC).
        power_w: Constant draw in watts; energy = power × time. ``None``: the
            plan compares mean intensities only (no grams, no dollars).
        interruptible: Whether the job may run in several pieces.
        min_chunk_s: Shortest piece when interruptible (capped at the duration).
        max_pieces: Most pieces when interruptible; ``None`` for no limit.

    Raises:
        ConfigError: A non-positive duration or power, naive times, a
            deadline too early (the message gives the earliest feasible
            one), a non-positive minimum chunk or piece count.
    """

    duration_s: float
    earliest_start: datetime
    deadline: datetime
    power_w: float | None = None
    interruptible: bool = False
    min_chunk_s: float = 1800.0
    max_pieces: int | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.duration_s) and self.duration_s > 0):
            raise ConfigError(f"the job's duration must be positive, got {self.duration_s:g} s")
        for name in ("earliest_start", "deadline"):
            moment = getattr(self, name)
            if moment.tzinfo is None or moment.utcoffset() is None:
                raise ConfigError(f"{name.replace('_', ' ')} {moment} has no time zone")
            object.__setattr__(self, name, moment.astimezone(timezone.utc))
        finish = self.earliest_start + timedelta(seconds=self.duration_s)
        if self.deadline < finish:
            raise ConfigError(
                f"deadline {_iso(self.deadline)} is earlier than earliest start "
                f"{_iso(self.earliest_start)} + duration {_hours(self.duration_s)}; "
                f"the earliest feasible deadline is {_iso(finish)}"
            )
        if self.power_w is not None and not (math.isfinite(self.power_w) and self.power_w > 0):
            raise ConfigError(f"the job's power must be positive, got {self.power_w:g} W")
        if not (math.isfinite(self.min_chunk_s) and self.min_chunk_s > 0):
            raise ConfigError(f"the minimum chunk must be positive, got {self.min_chunk_s:g} s")
        if self.max_pieces is not None and self.max_pieces < 1:
            raise ConfigError(f"the maximum number of pieces must be ≥ 1, got {self.max_pieces}")

    @classmethod
    def from_energy(
        cls, energy_j: float, power_w: float, earliest_start: datetime, deadline: datetime,
        **options: object,
    ) -> Job:  # fmt: skip
        """A job given by its energy and constant power: duration = energy ÷ power.

        Raises:
            ConfigError: Non-positive energy or power (or as :class:`Job`).
        """
        if not (math.isfinite(energy_j) and energy_j > 0):
            raise ConfigError(f"the job's energy must be positive, got {energy_j:g} J")
        if not (math.isfinite(power_w) and power_w > 0):
            raise ConfigError(f"the job's power must be positive, got {power_w:g} W")
        return cls(energy_j / power_w, earliest_start, deadline, power_w, **options)  # type: ignore[arg-type]

    @property
    def earliest_start_s(self) -> float:
        """Earliest start as Unix seconds."""
        return self.earliest_start.timestamp()

    @property
    def deadline_s(self) -> float:
        """Deadline as Unix seconds."""
        return self.deadline.timestamp()

    @property
    def energy_j(self) -> float | None:
        """power × duration, or ``None`` when the power is unknown."""
        return None if self.power_w is None else self.power_w * self.duration_s

    @property
    def energy_kwh(self) -> float | None:
        """The energy in kWh (for display and grams = kWh × g/kWh)."""
        energy = self.energy_j
        return None if energy is None else energy / JOULES_PER_KWH

    @property
    def chunk_s(self) -> float:
        """The minimum piece actually applied: ``min_chunk_s`` capped at the duration."""
        return min(self.min_chunk_s, self.duration_s)

    @property
    def piece_limit(self) -> int:
        """Most pieces possible: 1 when not interruptible, else ``max_pieces`` and
        duration ÷ minimum chunk, whichever is smaller."""
        if not self.interruptible:
            return 1
        fit = max(1, math.floor(self.duration_s / self.chunk_s + 1e-9))
        return fit if self.max_pieces is None else min(fit, self.max_pieces)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%MZ" if moment.second == 0 else "%Y-%m-%dT%H:%M:%SZ")


def _hours(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"
