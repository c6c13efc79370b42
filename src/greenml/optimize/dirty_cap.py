"""Carbon-aware power capping during a run: a lower GPU limit while the grid is dirty.

:class:`DirtyCapController` is driven by a tick (``greenml run``'s once-a-second
hook, or a simulated clock in ``benchmarks/cap_when_dirty.py``). At each tick it
reads the grid's intensity; above ``dirty_above_g_per_kwh`` it sets the
*capped* limit — the limit of least energy per unit of work on the job's
measured time/energy curve (the power-limit optimizer's profiles) — and at or
below it restores the uncapped (highest) limit.

Deadline. Capping slows the job: a second at limit ``L`` does ``t_max / t_L``
seconds of uncapped work. The time lost is charged to the slack the deadline
allows (deadline − start − the uncapped duration); once the slack is spent the
limit goes back up and stays there. Without a deadline the slack is unbounded.

Saving, against the same job run uncapped from the same start. The job's
progress is counted in uncapped-seconds; running uncapped it would have
drawn ``P_max = E_max / t_max`` over the first ``progress`` seconds of the run,
at the intensity of those seconds. As run, it drew what the Meter measured
(the curve's power at the limit in force when no GPU energy is given) at each
tick's intensity. Saved = uncapped − as run. Both use the same intensity, so
its error mostly cancels; the uncertainty combines the curve's relative
uncertainty (on the counterfactual) and the measurement's (on the run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from greenml.errors import ConfigError
from greenml.optimize.objective import LimitProfile

J_PER_KWH = 3.6e6


class Limiter(Protocol):
    """What the controller needs of a GPU control (:class:`CapControl` has it)."""

    def set_all(self, limit_w: float) -> None: ...


@dataclass(frozen=True)
class CapCurve:
    """The job's time and energy per unit of work at each power limit."""

    profiles: tuple[LimitProfile, ...]
    source: str
    uncertainty_rel: float = 0.05

    def __post_init__(self) -> None:
        if len(self.profiles) < 2:
            raise ConfigError("the power-limit curve needs at least two limits")
        if any(p.time_s <= 0 or p.energy_j <= 0 for p in self.profiles):
            raise ConfigError("every limit of the curve needs a time and an energy above 0")

    @property
    def uncapped(self) -> LimitProfile:
        return max(self.profiles, key=lambda p: p.power_limit_w)

    @property
    def capped(self) -> LimitProfile:
        """The limit of least energy per unit of work."""
        return min(self.profiles, key=lambda p: (p.energy_j, -p.power_limit_w))

    @classmethod
    def from_json(cls, data: Any, source: str) -> CapCurve:
        """The optimizer's ``summary()`` (``profiles``), or a bare list of profiles."""
        rows = data.get("profiles") if isinstance(data, dict) else data
        if not isinstance(rows, list):
            raise ConfigError(f"{source}: expected a list of profiles or an optimizer summary")
        try:
            profiles = tuple(
                LimitProfile(float(r["power_limit_w"]), float(r["time_s"]), float(r["energy_j"]))
                for r in rows
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{source}: each profile needs power_limit_w, time_s and "
                              f"energy_j numbers ({exc!r})") from exc  # fmt: skip
        if not all(math.isfinite(v) for p in profiles
                   for v in (p.power_limit_w, p.time_s, p.energy_j)):  # fmt: skip
            raise ConfigError(f"{source}: the curve holds a value that is not finite")
        rel = data.get("energy_uncertainty_rel") if isinstance(data, dict) else None
        return cls(profiles, source, float(rel) if isinstance(rel, (int, float)) else 0.05)


@dataclass
class _Tick:
    dt_s: float
    intensity: float
    energy_j: float
    limit_w: float


@dataclass
class DirtyCapController:
    """Caps while dirty, restores while clean, within the deadline's slack."""

    limiter: Limiter
    curve: CapCurve
    intensity_at: Callable[[float], float]  # unix time → g/kWh
    dirty_above_g_per_kwh: float
    started_s: float
    slack_s: float | None = None
    intensity_source: str = ""
    measured_uncertainty_rel: float = 0.05
    changes: list[dict[str, Any]] = field(default_factory=list)
    _ticks: list[_Tick] = field(default_factory=list)
    _limit_w: float | None = None
    _last_s: float | None = None
    _last_energy_j: float | None = None
    _lost_s: float = 0.0
    _progress_s: float = 0.0

    def tick(self, now_s: float, gpu_energy_j: float | None = None) -> None:
        """Account the time since the last tick, then choose the limit until the next."""
        intensity = float(self.intensity_at(now_s))
        if self._last_s is not None and self._limit_w is not None:
            self._account(now_s - self._last_s, intensity, gpu_energy_j)
        self._last_s, self._last_energy_j = now_s, gpu_energy_j
        capped, uncapped = self.curve.capped, self.curve.uncapped
        slowdown = 1.0 - uncapped.time_s / capped.time_s
        has_slack = self.slack_s is None or self._lost_s + 1e-9 < self.slack_s
        if intensity > self.dirty_above_g_per_kwh and has_slack and slowdown >= 0:
            self._set(capped.power_limit_w, now_s, intensity, "dirty")
        else:
            why = "clean" if intensity <= self.dirty_above_g_per_kwh else "deadline: no slack left"
            self._set(uncapped.power_limit_w, now_s, intensity, why)

    @property
    def progress_s(self) -> float:
        """The work done so far, in seconds of the job run uncapped."""
        return self._progress_s

    def _account(self, dt_s: float, intensity: float, energy_j: float | None) -> None:
        if dt_s <= 0:
            return
        at = self._profile(self._limit_w)
        rate = self.curve.uncapped.time_s / at.time_s  # uncapped-seconds of work per second
        self._progress_s += dt_s * rate
        self._lost_s += dt_s * (1.0 - rate)
        if energy_j is not None and self._last_energy_j is not None:
            used = max(0.0, energy_j - self._last_energy_j)
        else:
            used = at.power_w * dt_s
        self._ticks.append(_Tick(dt_s, intensity, used, at.power_limit_w))

    def _profile(self, limit_w: float | None) -> LimitProfile:
        return next(p for p in self.curve.profiles if p.power_limit_w == limit_w)

    def _set(self, limit_w: float, now_s: float, intensity: float, why: str) -> None:
        if limit_w == self._limit_w:
            return
        self.limiter.set_all(limit_w)
        self._limit_w = limit_w
        at = datetime.fromtimestamp(now_s, timezone.utc).isoformat()
        self.changes.append({"at": at, "power_limit_w": limit_w,
                             "intensity_g_per_kwh": intensity, "reason": why})  # fmt: skip

    def finish(self, now_s: float, gpu_energy_j: float | None = None) -> dict[str, Any]:
        """Account the last interval; the ``dirty_cap`` block of the run record."""
        if self._last_s is not None and self._limit_w is not None:
            self._account(now_s - self._last_s, float(self.intensity_at(now_s)), gpu_energy_j)
            self._last_s = now_s
        as_run = sum(t.energy_j * t.intensity for t in self._ticks) / J_PER_KWH
        uncapped = self._uncapped_g()
        u = math.hypot(self.curve.uncertainty_rel * uncapped,
                       self.measured_uncertainty_rel * as_run)  # fmt: skip
        top = self.curve.uncapped.power_limit_w
        capped_s = sum(t.dt_s for t in self._ticks if t.limit_w != top)
        return {
            "dirty_above_g_per_kwh": self.dirty_above_g_per_kwh,
            "capped_limit_w": self.curve.capped.power_limit_w,
            "uncapped_limit_w": self.curve.uncapped.power_limit_w,
            "intensity_source": self.intensity_source,
            "curve_source": self.curve.source,
            "slack_s": self.slack_s,
            "changes": list(self.changes),
            "capped_s": capped_s,
            "co2_g": as_run,
            "co2_uncapped_g": uncapped,
            "co2_saved_g": uncapped - as_run,
            "co2_saved_uncertainty_g": u,
            "time_cost_s": self._lost_s,
            "method": "estimated: the job run uncapped from the same start, from its "
            "time/energy curve, against the GPU energy as run; both at the intensity of "
            "each second",
        }

    def _uncapped_g(self) -> float:
        """The same work at the uncapped limit from the start: P_max over its first seconds."""
        power = self.curve.uncapped.power_w
        left, grams = self._progress_s, 0.0
        for t in self._ticks:
            if left <= 0:
                break
            span = min(t.dt_s, left)
            grams += power * span * t.intensity / J_PER_KWH
            left -= span
        return grams


def dirty_threshold(values: Sequence[float]) -> float:
    """The default threshold: the median of the intensities expected over the run."""
    if not values:
        raise ConfigError("no intensity known over the run: pass --dirty-above G_PER_KWH")
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
