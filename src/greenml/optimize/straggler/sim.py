"""Simulate straggler-aware power planning on measured V100 curves.

Synchronous data parallel training on ``ranks`` V100s: each step, every rank
computes (its time follows the measured time-vs-power-limit curve of a Zeus
workload, times the rank's injected slowdown, times per-step jitter), then all
wait for the slowest and communicate. The same steps, with the same jitter, run
twice: all GPUs at the highest limit (the baseline), and under a
:class:`~greenml.optimize.straggler.planner.StragglerPlanner` fed the measured compute
times, whose curves are the trace re-measured with profiling noise. Energy is
computing power × compute time plus ``wait_power_w`` while waiting and
communicating. The imbalance shifts midway by default, so a re-plan is needed.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from greenml.data import packaged
from greenml.errors import ConfigError
from greenml.optimize.straggler.planner import (
    CLOCK,
    KNOB_UNITS,
    POWER_LIMIT,
    PowerCurve,
    StragglerPlanner,
)

CURVES_FILE = "v100_power_curves.csv"
CURVES_SOURCE = (
    "NVIDIA V100 time per epoch and average power per power limit, Zeus NSDI'23 power trace "
    "(ml-energy/zeus, summary_power_v100.csv, Apache-2.0)"
)
# The simulation's assumption, printed with every result: a V100 spinning in an
# NCCL collective draws well above idle (~40 W) yet far below computing.
DEFAULT_WAIT_POWER_W = 70.0
# The traced V100 is the PCIe card (limits 100–250 W); its boost clock is 1380 MHz
# (NVIDIA Tesla V100 PCIe datasheet).
V100_MAX_CLOCK_MHZ = 1380.0
CLOCK_MODEL = (
    "clock curve derived from the power-limit trace: each operating point at the locked "
    f"clock that gives its step time (time ∝ 1/clock, {V100_MAX_CLOCK_MHZ:g} MHz at the "
    "highest limit)"
)


def workloads() -> list[str]:
    """The datasets whose V100 curves are packaged."""
    return sorted({row["dataset"] for row in _rows()})


def v100_curve(workload: str = "imagenet", compute_s: float = 0.5) -> PowerCurve:
    """The V100 curve of ``workload``, its time scaled to ``compute_s`` per step at 250 W.

    Raises:
        ConfigError: Unknown workload or non-positive ``compute_s``.
    """
    if not compute_s > 0:
        raise ConfigError(f"compute time per step must be > 0 s, not {compute_s}")
    rows = sorted(
        (float(r["power_limit"]), float(r["time_per_epoch"]), float(r["average_power"]))
        for r in _rows()
        if r["dataset"] == workload
    )
    if not rows:
        raise ConfigError(f"unknown workload {workload!r}; known: {', '.join(workloads())}")
    scale = compute_s / rows[-1][1]
    return PowerCurve(
        tuple(r[0] for r in rows), tuple(r[1] * scale for r in rows), tuple(r[2] for r in rows)
    )


def _rows() -> list[dict[str, str]]:
    text = packaged(CURVES_FILE).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def _default_phases() -> tuple[tuple[float, Mapping[int, float]], ...]:
    # Rank 3 straggles by 15 %; halfway it recovers and ranks 5 and 6 slow down.
    return ((0.0, {3: 1.15}), (0.5, {5: 1.08, 6: 1.12}))


@dataclass(frozen=True)
class SimConfig:
    """What to simulate.

    Attributes:
        phases: (fraction of the run, {rank: slowdown}) from which each imbalance holds.
        noise_rel: Per-step jitter of each rank's compute time (standard deviation).
        profile_noise_rel: Error of the planner's curves (profiling noise) per point.
        knob: What the planner sets: ``power-limit`` or ``clock`` (Perseus).
    """

    ranks: int = 8
    steps: int = 600
    workload: str = "imagenet"
    compute_s: float = 0.5
    comm_s: float = 0.05
    noise_rel: float = 0.01
    profile_noise_rel: float = 0.01
    wait_power_w: float = DEFAULT_WAIT_POWER_W
    seed: int = 0
    knob: str = POWER_LIMIT
    phases: tuple[tuple[float, Mapping[int, float]], ...] = field(default_factory=_default_phases)

    def check(self) -> None:
        """ConfigError on a configuration that cannot run."""
        if self.knob not in KNOB_UNITS:
            raise ConfigError(f"knob must be one of {', '.join(KNOB_UNITS)}, not {self.knob!r}")
        if self.ranks < 2 or self.steps < 20:
            raise ConfigError("the simulation needs at least 2 ranks and 20 steps")
        if not (0 <= self.noise_rel < 0.2 and 0 <= self.profile_noise_rel < 0.2):
            raise ConfigError("noise must lie in [0, 0.2)")
        if self.comm_s < 0 or self.wait_power_w < 0:
            raise ConfigError("communication time and wait power must be >= 0")
        for _, slow in self.phases:
            if any(not 0 <= r < self.ranks or f <= 0 for r, f in slow.items()):
                raise ConfigError(f"slowdowns {dict(slow)} must name ranks below {self.ranks}")


@dataclass(frozen=True)
class SimResult:
    """Baseline (all at the highest limit) against planned limits, same steps and jitter."""

    config: SimConfig
    baseline_energy_j: float
    planned_energy_j: float
    baseline_step_s: float
    planned_step_s: float
    replans: int
    plans: list[dict[str, Any]]

    @property
    def saved_j(self) -> float:
        return self.baseline_energy_j - self.planned_energy_j

    @property
    def saved_rel(self) -> float:
        return self.saved_j / self.baseline_energy_j

    @property
    def step_time_change_rel(self) -> float:
        return self.planned_step_s / self.baseline_step_s - 1.0

    def to_dict(self) -> dict[str, Any]:
        c = self.config
        assumptions: dict[str, Any] = {
            "wait_power_w": c.wait_power_w,
            "comm_s": c.comm_s,
            "noise_rel": c.noise_rel,
            "profile_noise_rel": c.profile_noise_rel,
        }
        if c.knob == CLOCK:
            assumptions["clock_model"] = CLOCK_MODEL
        return {
            "method": "simulated",
            "knob": c.knob,
            "unit": KNOB_UNITS[c.knob],
            "source": CURVES_SOURCE,
            "assumptions": assumptions,
            "workload": c.workload,
            "ranks": c.ranks,
            "steps": c.steps,
            "slowdowns": [{"from_step": int(f * c.steps), "ranks": dict(s)} for f, s in c.phases],
            "baseline_energy_j": self.baseline_energy_j,
            "planned_energy_j": self.planned_energy_j,
            "saved_j": self.saved_j,
            "saved_rel": self.saved_rel,
            "baseline_step_s": self.baseline_step_s,
            "planned_step_s": self.planned_step_s,
            "step_time_change_rel": self.step_time_change_rel,
            "replans": self.replans,
            "plans": self.plans,
        }


def simulate(config: SimConfig | None = None) -> SimResult:
    """Run the baseline and the planned training on the same jitter."""
    config = config or SimConfig()
    config.check()
    truth = v100_curve(config.workload, config.compute_s)
    if config.knob == CLOCK:
        truth = truth.as_clock_curve(V100_MAX_CLOCK_MHZ)
    rng = random.Random(config.seed)
    models = [_remeasured(truth, config.profile_noise_rel, rng) for _ in range(config.ranks)]
    jitter = [[rng.gauss(1.0, config.noise_rel) for _ in range(config.ranks)]
              for _ in range(config.steps)]  # fmt: skip
    slowdowns = [_slowdowns(config, step) for step in range(config.steps)]
    base_j = base_s = plan_j = plan_s = 0.0
    planner = StragglerPlanner(models, wait_power_w=config.wait_power_w)
    plans: list[dict[str, Any]] = []
    for step in range(config.steps):
        factors = [s * j for s, j in zip(slowdowns[step], jitter[step], strict=True)]
        energy_j, step_s, _ = _step(truth, [truth.max_w] * config.ranks, factors, config)
        base_j, base_s = base_j + energy_j, base_s + step_s
        energy_j, step_s, computes = _step(truth, planner.limits_w, factors, config)
        plan_j, plan_s = plan_j + energy_j, plan_s + step_s
        plan = planner.observe(computes)
        if plan is not None:
            plans.append({"step": step + 1, "critical_rank": plan.critical_rank,
                          "knob": plan.knob, "limits_w": plan.limits_w})  # fmt: skip
    n = config.steps
    return SimResult(config, base_j, plan_j, base_s / n, plan_s / n, planner.replans, plans)


def _step(
    truth: PowerCurve, limits_w: Sequence[float], factors: Sequence[float], config: SimConfig
) -> tuple[float, float, list[float]]:
    """(energy of all GPUs, step time, per-rank compute times) of one step."""
    computes = [truth.time_at(w) * f for w, f in zip(limits_w, factors, strict=True)]
    step_s = max(computes) + config.comm_s
    energy_j = sum(
        truth.power_at(w) * c + config.wait_power_w * (step_s - c)
        for w, c in zip(limits_w, computes, strict=True)
    )
    return energy_j, step_s, computes


def _slowdowns(config: SimConfig, step: int) -> list[float]:
    current: Mapping[int, float] = {}
    for start, slow in config.phases:
        if step >= start * config.steps:
            current = slow
    return [current.get(r, 1.0) for r in range(config.ranks)]


def _remeasured(truth: PowerCurve, noise_rel: float, rng: random.Random) -> PowerCurve:
    """The curve as a profile of one GPU would give it: each point off by the noise."""
    return PowerCurve(
        truth.limits_w,
        tuple(t * rng.gauss(1.0, noise_rel) for t in truth.time_s),
        tuple(p * rng.gauss(1.0, noise_rel) for p in truth.power_w),
        knob=truth.knob,
    )


def simulate_seeds(config: SimConfig, seeds: int = 5) -> dict[str, Any]:
    """:func:`simulate` with seeds ``config.seed`` … ``+ seeds − 1``: the spread of each figure."""
    if seeds < 1:
        raise ConfigError(f"seeds must be >= 1, not {seeds}")
    results = [simulate(replace(config, seed=config.seed + i)) for i in range(seeds)]

    def spread(values: list[float]) -> dict[str, float]:
        return {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}

    return {
        "method": "simulated",
        "knob": config.knob,
        "unit": KNOB_UNITS[config.knob],
        "baseline_energy_j": spread([r.baseline_energy_j for r in results])["mean"],
        "planned_energy_j": spread([r.planned_energy_j for r in results])["mean"],
        "saved_rel": spread([r.saved_rel for r in results]),
        "step_time_change_rel": spread([r.step_time_change_rel for r in results]),
        "replans": [r.replans for r in results],
        "runs": [r.to_dict() for r in results],
    }
