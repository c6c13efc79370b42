"""Replay a recurring job from Zeus-format traces with greenml's two optimizers.

Each recurrence, the :class:`~greenml.optimize.batch_size.BatchSizeOptimizer`
picks a batch size; the power limit is chosen the way Zeus's just-in-time
profiler does it: the first time a batch size runs, its first epoch is split
evenly over every power limit (highest first), the limit of least cost
(:func:`~greenml.optimize.objective.pick_power_limit`) is kept for that size,
and the profiling epoch is charged at what it really cost. A training path
(the epoch the target is reached at) is drawn from the train trace; the run
stops early once its cost would pass β × the best cost so far, and a run that
fails is retried within the same recurrence.

Energy and time are *replayed*, not measured: epochs × time per epoch ×
average power from the traces; the only randomness is the drawn path.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from greenml.errors import ConfigError
from greenml.optimize.batch_size import BatchSizeOptimizer
from greenml.optimize.objective import LimitProfile, check_eta, pick_power_limit
from greenml.optimize.zeus_trace import WorkloadTrace

PROVENANCE = (
    "replayed from traces: energy = epochs x time_per_epoch x average_power of the power "
    "trace, epochs drawn from the train trace; cost = eta*E + (1-eta)*P_max*T in joules"
)
MAX_ATTEMPTS = 20  # retries of one recurrence before it counts as unreached (as Zeus)


@dataclass(frozen=True)
class Run:
    """One run (attempt) of one recurrence."""

    recurrence: int
    attempt: int
    batch_size: int
    power_limit: float
    energy_j: float
    time_s: float
    cost: float
    epochs: int
    reached: bool
    profiled: bool


@dataclass(frozen=True)
class Choice:
    """A fixed (batch size, power limit) and what one recurrence costs with it, expected.

    Failing paths count: a recurrence is retried until it succeeds, so the
    expected epochs are those of one attempt divided by the share that succeed.
    """

    batch_size: int
    power_limit: float
    energy_j: float
    time_s: float
    cost: float
    reach_share: float


@dataclass(frozen=True)
class Simulation:
    """The outcome of replaying N recurrences."""

    workload: str
    eta: float
    beta: float
    seed: int
    recurrences: int
    max_power_w: float
    default_batch_size: int
    history: tuple[Run, ...]
    oracle: Choice
    baseline: Choice
    skipped: tuple[dict[str, object], ...]

    @property
    def total_energy_j(self) -> float:
        """Energy of every run, failed ones included."""
        return sum(r.energy_j for r in self.history)

    @property
    def total_time_s(self) -> float:
        """Time of every run, failed ones included."""
        return sum(r.time_s for r in self.history)

    @property
    def total_cost(self) -> float:
        """Cost of every run (J)."""
        return sum(r.cost for r in self.history)

    def recurrence_costs(self) -> list[float]:
        """Cost of each recurrence, its failed attempts included."""
        costs = [0.0] * self.recurrences
        for run in self.history:
            costs[run.recurrence - 1] += run.cost
        return costs

    def second_half_ratio(self) -> float:
        """Mean cost of the last half of the recurrences over the oracle's expected cost."""
        tail = self.recurrence_costs()[self.recurrences // 2 :]
        return sum(tail) / len(tail) / self.oracle.cost if tail else float("nan")

    def to_dict(self) -> dict[str, object]:
        """The JSON document of ``greenml optimize simulate --json``."""
        n = self.recurrences
        return {
            "workload": self.workload,
            "eta": self.eta,
            "beta": self.beta,
            "seed": self.seed,
            "recurrences": n,
            "max_power_w": self.max_power_w,
            "default_batch_size": self.default_batch_size,
            "method": PROVENANCE,
            "uncertainty": "none within a replay (deterministic given the seed); "
            "the spread between seeds is the run-to-run variation",
            "total_energy_j": self.total_energy_j,
            "total_time_s": self.total_time_s,
            "total_cost": self.total_cost,
            "history": [asdict(r) for r in self.history],
            "oracle": _fixed(self.oracle, n),
            "baseline": _fixed(self.baseline, n),
            "second_half_cost_vs_oracle": self.second_half_ratio(),
            "skipped": list(self.skipped),
        }


def _fixed(choice: Choice, n: int) -> dict[str, object]:
    """A fixed choice: expected energy, time and cost per recurrence, and over ``n``."""
    return {
        **asdict(choice),
        "per": "recurrence, expected",
        "total_energy_j": choice.energy_j * n,
        "total_time_s": choice.time_s * n,
        "total_cost": choice.cost * n,
    }


def expected_choice(
    trace: WorkloadTrace, batch_size: int, power_limit: float, eta: float
) -> Choice:
    """The expected cost of one recurrence at a fixed (batch size, power limit)."""
    paths = trace.epochs[batch_size]
    reached = [e for e in paths if e is not None]
    share = len(reached) / len(paths)
    attempt_epochs = sum(e if e is not None else trace.job.max_epochs for e in paths) / len(paths)
    epochs = attempt_epochs / share if share else float("inf")
    prof = trace.profiles[(batch_size, power_limit)]
    energy_j, time_s = epochs * prof.energy_j, epochs * prof.time_s
    cost = eta * energy_j + (1 - eta) * trace.max_power_w * time_s
    return Choice(batch_size, power_limit, energy_j, time_s, cost, share)


def simulate(
    trace: WorkloadTrace,
    *,
    eta: float = 0.5,
    beta: float = 2.0,
    recurrences: int | None = None,
    seed: int = 0,
    profile_share: float = 1.0,
) -> Simulation:
    """Replay ``recurrences`` runs of the job (default 2 × |batch sizes| × |power limits|).

    Args:
        trace: The job's traces (:func:`~greenml.optimize.zeus_trace.load_workload`).
        eta: Weight of energy against time, in [0, 1].
        beta: Early-stop factor (> 1) on the best cost so far.
        recurrences: How many times the job recurs.
        seed: Seeds the drawn training paths and the Thompson draws.
        profile_share: Share of the first epoch spent profiling limits (Zeus: 1).

    Raises:
        ConfigError: Bad eta, beta, recurrences or profile share.
    """
    check_eta(eta)
    n = 2 * len(trace.batch_sizes) * len(trace.power_limits) if recurrences is None else recurrences
    if n < 1:
        raise ConfigError(f"recurrences must be at least 1, not {n}")
    if not 0 < profile_share <= 1:
        raise ConfigError(f"profile_share must be in (0, 1], not {profile_share}")
    bso = BatchSizeOptimizer(
        trace.job.workload,
        trace.batch_sizes,
        trace.default_batch_size,
        max_power_w=trace.max_power_w,
        eta=eta,
        beta=beta,
        seed=seed,
    )
    rng = random.Random(seed)
    limits: dict[int, float] = {}
    history: list[Run] = []
    for recurrence in range(1, n + 1):
        for attempt in range(1, MAX_ATTEMPTS + 1):
            batch_size = bso.get_batch_size()
            profiled = batch_size not in limits
            if profiled:
                limits[batch_size] = _profile(trace, batch_size, eta)
            target = rng.choice(trace.epochs[batch_size])
            run = _run(
                trace,
                bso,
                (recurrence, attempt),
                batch_size,
                limits[batch_size],
                target,
                profile_share if profiled else 0.0,
            )
            if run.epochs == 0:  # never started: its limits are profiled when it next runs
                limits.pop(batch_size, None)
            bso.report(batch_size, run.energy_j, run.time_s, run.reached, epochs=run.epochs)
            history.append(run)
            if run.reached:
                break
    oracle = min(
        (expected_choice(trace, b, p, eta) for b, p in trace.profiles),
        key=lambda c: (c.cost, c.batch_size, -c.power_limit),
    )
    default = trace.default_batch_size
    baseline = expected_choice(trace, default, trace.limits_for(default)[0], eta)
    return Simulation(
        workload=trace.job.workload,
        eta=eta,
        beta=beta,
        seed=seed,
        recurrences=n,
        max_power_w=trace.max_power_w,
        default_batch_size=default,
        history=tuple(history),
        oracle=oracle,
        baseline=baseline,
        skipped=tuple(asdict(s) for s in trace.skipped),
    )


def _profile(trace: WorkloadTrace, batch_size: int, eta: float) -> float:
    """The limit Zeus's JIT profiler keeps: least cost per epoch over every limit."""
    profiles = []
    for limit in trace.limits_for(batch_size):
        epoch = trace.profiles[(batch_size, limit)]
        profiles.append(LimitProfile(limit, epoch.time_s, epoch.energy_j))
    return pick_power_limit(profiles, eta, trace.max_power_w).power_limit_w


def _run(
    trace: WorkloadTrace,
    bso: BatchSizeOptimizer,
    when: tuple[int, int],
    batch_size: int,
    limit: float,
    target: int | None,
    profile_share: float,
) -> Run:
    """Replay one run: epochs until the target, max_epochs, or the cost threshold.

    With ``profile_share`` > 0 that share of the first epoch is split evenly over
    every power limit of the batch size; the rest runs at ``limit``.
    """
    epoch = trace.profiles[(batch_size, limit)]
    first_e, first_t = epoch.energy_j, epoch.time_s
    if profile_share > 0:
        every = [trace.profiles[(batch_size, p)] for p in trace.limits_for(batch_size)]
        share = profile_share / len(every)
        first_e = share * sum(p.energy_j for p in every) + (1 - profile_share) * first_e
        first_t = share * sum(p.time_s for p in every) + (1 - profile_share) * first_t
    threshold = bso.stop_cost_j()
    last = target if target is not None else trace.job.max_epochs
    energy_j = time_s = 0.0
    epochs = 0
    while epochs < last:
        e_j, t_s = (first_e, first_t) if epochs == 0 else (epoch.energy_j, epoch.time_s)
        if threshold is not None and bso.cost(energy_j + e_j, time_s + t_s) > threshold:
            break  # early stop: the next epoch would pass beta x best
        energy_j, time_s, epochs = energy_j + e_j, time_s + t_s, epochs + 1
    return Run(
        recurrence=when[0],
        attempt=when[1],
        batch_size=batch_size,
        power_limit=limit,
        energy_j=energy_j,
        time_s=time_s,
        cost=bso.cost(energy_j, time_s),
        epochs=epochs,
        reached=target is not None and epochs >= target,
        profiled=profile_share > 0 and epochs > 0,
    )
