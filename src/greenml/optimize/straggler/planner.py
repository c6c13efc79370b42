"""Straggler-aware power limits for synchronous data parallel training (Perseus).

In synchronous data parallelism a step ends when the slowest rank has computed
its share: the others wait for it at the collective. Their speed off the
critical path buys nothing, so each can run at a lower power limit and finish
just in time with the slowest one: less energy, the same step time (Chung et
al., "Perseus: Reducing Energy Bloat in Large Model Training", SOSP 2024).
The knob is either the power limit (watts) or, as Perseus does, the locked
graphics clock (MHz): a :class:`PowerCurve` says which (``knob``), and so does
every :class:`StragglerPlan`.

The plan needs each GPU's time-vs-power curve (:class:`PowerCurve`, from the
power-limit profiles of :mod:`greenml.optimize.power_limit` or a trace) and
each rank's measured compute time per step at the limits in force. A rank's
curve is calibrated by its measurement (a straggler is slower than its curve
at every limit by the same factor); the critical rank keeps its highest limit;
every other rank gets the limit of least predicted energy (or the lowest) whose
predicted time stays under the critical time less a safety margin.
:class:`StragglerPlanner` re-plans when the measured imbalance moves.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from greenml.errors import ConfigError
from greenml.optimize.objective import LimitProfile

POWER_LIMIT = "power-limit"
CLOCK = "clock"
KNOB_UNITS = {POWER_LIMIT: "W", CLOCK: "MHz"}


@dataclass(frozen=True)
class PowerCurve:
    """Compute time per step and mean power of one GPU against a knob: power limit or clock.

    Between the given settings both are linear; outside, they are held.

    Attributes:
        limits_w: Settings of the knob, ascending: power limits in watts, or
            locked graphics clocks in MHz when ``knob`` is ``clock``.
        time_s: Compute time of one step at each setting.
        power_w: Mean power while computing at each setting.
        knob: ``power-limit`` or ``clock``.
    """

    limits_w: tuple[float, ...]
    time_s: tuple[float, ...]
    power_w: tuple[float, ...]
    knob: str = POWER_LIMIT

    def __post_init__(self) -> None:
        if self.knob not in KNOB_UNITS:
            raise ConfigError(f"knob must be one of {', '.join(KNOB_UNITS)}, not {self.knob!r}")
        n = len(self.limits_w)
        if n == 0 or len(self.time_s) != n or len(self.power_w) != n:
            raise ConfigError("a power curve needs one time and one power per limit, at least one")
        if any(b <= a for a, b in zip(self.limits_w, self.limits_w[1:], strict=False)):
            raise ConfigError(f"power curve limits must be ascending and distinct: {self.limits_w}")
        values = (*self.limits_w, *self.time_s, *self.power_w)
        if not all(v > 0 and math.isfinite(v) for v in values):
            raise ConfigError("power curve limits, times and powers must be positive numbers")

    @classmethod
    def from_profiles(cls, profiles: Sequence[LimitProfile]) -> PowerCurve:
        """From the power-limit optimizer's profiles (per step time and energy)."""
        rows = sorted((p.power_limit_w, p.time_s, p.power_w) for p in profiles)
        return cls(tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows))

    @property
    def unit(self) -> str:
        """``W`` for power limits, ``MHz`` for clocks."""
        return KNOB_UNITS[self.knob]

    def as_clock_curve(self, max_clock_mhz: float) -> PowerCurve:
        """The same operating points against the graphics clock that reaches them (a model).

        A power limit works by lowering the clock until the power fits; locking the
        clock that gives the same step time reaches the same point. With compute time
        inversely proportional to the clock, the point of time ``t`` runs at
        ``max_clock_mhz × t(highest limit) / t``. Points that land on the same clock
        keep the lower power.

        Raises:
            ConfigError: This curve is not a power-limit curve.
        """
        if self.knob != POWER_LIMIT:
            raise ConfigError("only a power-limit curve can be turned into a clock curve")
        fastest = self.time_at(self.max_w)
        points: dict[float, tuple[float, float]] = {}
        for t, p in zip(self.time_s, self.power_w, strict=True):
            mhz = float(round(max_clock_mhz * fastest / t))
            if mhz not in points or p < points[mhz][1]:
                points[mhz] = (t, p)
        rows = sorted(points.items())
        return PowerCurve(tuple(m for m, _ in rows), tuple(tp[0] for _, tp in rows),
                          tuple(tp[1] for _, tp in rows), knob=CLOCK)  # fmt: skip

    @property
    def min_w(self) -> float:
        return self.limits_w[0]

    @property
    def max_w(self) -> float:
        return self.limits_w[-1]

    def time_at(self, limit_w: float) -> float:
        """Compute time of one step at ``limit_w``."""
        return _interpolate(self.limits_w, self.time_s, limit_w)

    def power_at(self, limit_w: float) -> float:
        """Mean power while computing at ``limit_w``."""
        return _interpolate(self.limits_w, self.power_w, limit_w)

    def candidates(self, step_w: float) -> list[float]:
        """Limits from the highest down to the lowest in steps of ``step_w`` (both ends kept)."""
        out = [self.max_w]
        while out[-1] - step_w > self.min_w:
            out.append(round(out[-1] - step_w, 6))
        if out[-1] != self.min_w:
            out.append(self.min_w)
        return out


def _interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    if x <= xs[0]:
        return ys[0]
    for i in range(1, len(xs)):
        if x <= xs[i]:
            a = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
            return ys[i - 1] + a * (ys[i] - ys[i - 1])
    return ys[-1]


@dataclass(frozen=True)
class RankPlan:
    """One rank's limit and what the calibrated curve predicts for it per step."""

    rank: int
    limit_w: float
    compute_s: float
    compute_energy_j: float
    critical: bool


@dataclass(frozen=True)
class StragglerPlan:
    """Per-rank settings; ``step_compute_s`` is the critical rank's compute time.

    ``knob`` says what the settings are: power limits (W) or graphics clocks (MHz).
    """

    ranks: tuple[RankPlan, ...]
    critical_rank: int
    step_compute_s: float
    margin_rel: float
    knob: str = POWER_LIMIT

    @property
    def limits_w(self) -> list[float]:
        return [r.limit_w for r in self.ranks]

    def to_dict(self) -> dict[str, object]:
        return {
            "knob": self.knob,
            "unit": KNOB_UNITS[self.knob],
            "critical_rank": self.critical_rank,
            "step_compute_s": self.step_compute_s,
            "margin_rel": self.margin_rel,
            "ranks": [asdict(r) for r in self.ranks],
        }


def plan_power(
    curves: Sequence[PowerCurve],
    compute_time_s: Sequence[float],
    limits_w: Sequence[float] | None = None,
    *,
    margin_rel: float | Sequence[float] = 0.01,
    step_w: float = 5.0,
    wait_power_w: float | None = None,
) -> StragglerPlan:
    """Limits that let every rank finish just in time with the critical one.

    Args:
        curves: Each rank's curve (a profiled or traced GPU of its kind).
        compute_time_s: Each rank's measured compute time per step.
        limits_w: The limits those times were measured at (default: each curve's highest).
        margin_rel: Slack under the critical time (one for all, or one per rank).
        step_w: Granularity of the limits tried.
        wait_power_w: Power of a GPU waiting at the collective; when given, the
            limit of least compute-plus-wait energy is chosen, else the lowest in time.

    Raises:
        ConfigError: Lengths differ, or a time or margin is not positive.
    """
    n = len(curves)
    limits = list(limits_w) if limits_w is not None else [c.max_w for c in curves]
    margins = [float(margin_rel)] * n if isinstance(margin_rel, float | int) else list(margin_rel)
    if not n or len(compute_time_s) != n or len(limits) != n or len(margins) != n:
        raise ConfigError(f"{n} curves need as many compute times, limits and margins")
    knobs = {c.knob for c in curves}
    if len(knobs) > 1:
        raise ConfigError(f"all ranks must plan the same knob, not {', '.join(sorted(knobs))}")
    if not all(t > 0 and math.isfinite(t) for t in compute_time_s):
        raise ConfigError(f"compute times must be positive: {list(compute_time_s)}")
    if not all(0 <= m < 1 for m in margins) or step_w <= 0:
        raise ConfigError("margins must lie in [0, 1) and step_w be > 0")
    measured = zip(compute_time_s, curves, limits, strict=True)
    slowness = [t / c.time_at(limit) for t, c, limit in measured]
    at_max = [s * c.time_at(c.max_w) for s, c in zip(slowness, curves, strict=True)]
    critical = max(range(n), key=lambda r: at_max[r])
    deadline_s = at_max[critical]
    ranks = []
    for r, (curve, slow) in enumerate(zip(curves, slowness, strict=True)):
        chosen = curve.max_w
        if r != critical:
            budget_s = deadline_s * (1.0 - margins[r])
            chosen = _pick(curve, slow, budget_s, deadline_s, step_w, wait_power_w)
        compute_s = slow * curve.time_at(chosen)
        energy_j = compute_s * curve.power_at(chosen)
        ranks.append(RankPlan(r, chosen, compute_s, energy_j, r == critical))
    return StragglerPlan(tuple(ranks), critical, deadline_s, max(margins), curves[0].knob)


def _pick(
    curve: PowerCurve,
    slow: float,
    budget_s: float,
    step_s: float,
    step_w: float,
    wait_power_w: float | None,
) -> float:
    """The limit for a rank off the critical path (its highest when none fits the budget)."""
    fitting = [w for w in curve.candidates(step_w) if slow * curve.time_at(w) <= budget_s]
    if not fitting:
        return curve.max_w
    if wait_power_w is None:
        return min(fitting)

    def energy_j(limit_w: float) -> tuple[float, float]:
        compute_s = slow * curve.time_at(limit_w)
        wait_j = wait_power_w * max(0.0, step_s - compute_s)
        return compute_s * curve.power_at(limit_w) + wait_j, limit_w

    return min(fitting, key=energy_j)


class StragglerPlanner:
    """Keeps a plan current: feed it each step's per-rank compute times.

    A plan is made from the median of ``window_steps`` steps at the limits in
    force, so each rank's curve is calibrated where it runs (errors of the
    curve far from there do not matter). After a plan, the first full window
    checks it: a rank off the critical path that is slower than the critical
    one is re-planned at once. Later windows are compared with that first one:
    when any rank's share of the slowest time moves by more than
    ``replan_threshold`` (or more than its jitter explains), the imbalance
    changed and a new plan is made. Each
    rank's margin is ``jitter_factor`` times its step-to-step jitter (relative
    standard deviation), at least ``min_margin``.

    Args:
        curves: Each rank's curve.
        window_steps: Steps whose median stands for a rank's speed.
        replan_threshold: Change of a rank's share that triggers a re-plan.
        min_margin: Smallest slack under the critical time.
        jitter_factor: Margin in units of the relative jitter.
        step_w: Granularity of limits.
        wait_power_w: See :func:`plan_power`.
    """

    def __init__(
        self,
        curves: Sequence[PowerCurve],
        *,
        window_steps: int = 8,
        replan_threshold: float = 0.02,
        min_margin: float = 0.005,
        jitter_factor: float = 2.5,
        step_w: float = 5.0,
        wait_power_w: float | None = None,
    ) -> None:
        if not curves or window_steps < 2 or replan_threshold <= 0:
            raise ConfigError("need curves, window_steps >= 2 and replan_threshold > 0")
        self.curves = list(curves)
        self.limits_w = [c.max_w for c in self.curves]
        self.plan: StragglerPlan | None = None
        self.replans = 0
        self._window = window_steps
        self._threshold = replan_threshold
        self._min_margin, self._jitter_factor = min_margin, jitter_factor
        self._step_w, self._wait_power_w = step_w, wait_power_w
        self._history: list[deque[float]] = [deque(maxlen=window_steps) for _ in self.curves]
        self._reference: list[float] | None = None  # shares in the first window of a plan
        self._bounds: list[float] = []  # how far each share may move before a re-plan

    def observe(self, compute_time_s: Sequence[float]) -> StragglerPlan | None:
        """Record one step; a new plan when one is due (apply its limits), else None."""
        if len(compute_time_s) != len(self.curves):
            n, got = len(self.curves), len(compute_time_s)
            raise ConfigError(f"{n} ranks planned, {got} compute times given")
        for hist, t in zip(self._history, compute_time_s, strict=True):
            hist.append(t)
        if len(self._history[0]) < self._window:
            return None
        medians = [statistics.median(h) for h in self._history]
        if self.plan is None:
            return self._replan(medians)
        top = max(medians)
        shares = [t / top for t in medians]
        if self._reference is None:
            critical_s = medians[self.plan.critical_rank]
            if any(t > critical_s for t in medians):  # a rank misses the critical time
                return self._replan(medians)
            self._reference = shares
            # A median of k steps wanders by ~1.25·σ/√k: a move of 4 such (for the
            # difference of two windows) is an imbalance change, not jitter.
            spread = 4 * 1.25 * math.sqrt(2 / self._window)
            self._bounds = [max(self._threshold, spread * j) for j in self._jitter(medians)]
            return None
        moved = (abs(a - b) > bound for a, b, bound in zip(
            shares, self._reference, self._bounds, strict=True))  # fmt: skip
        return self._replan(medians) if any(moved) else None

    def _jitter(self, medians: list[float]) -> list[float]:
        """Each rank's step-to-step relative standard deviation in the window."""
        return [statistics.pstdev(h) / m for h, m in zip(self._history, medians, strict=True)]

    def _replan(self, medians: list[float]) -> StragglerPlan:
        margins = [
            min(0.5, max(self._min_margin, self._jitter_factor * j)) for j in self._jitter(medians)
        ]
        plan = plan_power(
            self.curves, medians, self.limits_w, margin_rel=margins,
            step_w=self._step_w, wait_power_w=self._wait_power_w,
        )  # fmt: skip
        self.replans += self.plan is not None
        self.plan, self.limits_w, self._reference = plan, plan.limits_w, None
        for hist in self._history:
            hist.clear()
        return plan
