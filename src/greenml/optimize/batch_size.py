"""Batch-size optimizer for recurring training jobs (the Zeus idea, NSDI'23).

Each recurrence of a job asks :meth:`BatchSizeOptimizer.get_batch_size`, trains,
and calls :meth:`BatchSizeOptimizer.report` with the energy and time it took and
whether it reached its target metric; the cost of a run is Zeus's
η·E + (1 − η)·P_max·T (:func:`greenml.optimize.objective.energy_time_cost`).

1. *Pruning.* From the default batch size it walks down, then up, one run per
   size; a direction ends at the first size that fails to reach the target, or
   after two rises of cost in a row that end above halfway to β × best (the
   next size would most likely only fail, at a cost of β × best).
2. *Gaussian Thompson sampling* over the sizes that reached it: the log-cost of
   a size is N(μ_b, σ²), with σ² shared by all sizes under a weak inverse-gamma
   prior (so one run per size is enough to start and the noise is learnt from
   the repeats); each recurrence takes the size whose sampled μ_b is least.

   When every run was reported with its number of epochs, a run's cost is
   (cost per epoch) × (epochs), and the two are modelled apart. The cost per
   epoch barely changes from run to run; almost all the noise is in how many
   epochs a run needs, and sizes often need about the same number (on SQuAD
   every size needs 4 or 5 epochs at random). So log(cost per epoch) is
   N(ν_b, σ_c²) as above, and each size's mean log-epochs θ_b is shrunk toward
   the mean over all sizes by an estimate τ² of how much the sizes truly
   differ: where they need about the same epochs every run informs every size
   and the cheaper cost per epoch decides; where they differ (18 against 70
   epochs) each size keeps its own mean. τ² is the boundary-avoiding estimate
   of :mod:`greenml.optimize.pooling`, never zero: the usual
   DerSimonian–Laird estimate is exactly zero whenever sizes differ by less
   than their noise (SQuAD: ~3 % in epochs against ~10 % run to run), every
   size then inherits the epochs of the size run most, and a size cheapest
   per epoch but needing a few per cent more epochs is exploited while the
   truly cheapest one is never tried again. The draw of a size is ν_b + θ_b,
   from the posteriors of both.

   With three sizes or more, θ_b is shrunk not toward the mean over sizes but
   toward a line in log batch size (a random-effects meta-regression: the
   level drawn from its posterior, the slope at its estimate; τ² now measures
   how far sizes stray from the line). Epochs to target move steadily with the batch size
   (ImageNet: 32, 25, 21, 20 epochs from 128 to 360). Shrunk toward the
   mean, the size needing most epochs borrowed the others' and, where it is
   cheapest per epoch (a GPU on which large batches gain little), looked as
   good as the best and was tried again and again, each run of an ImageNet
   recurrence costing 1.2-1.5 x the best; the shared noise variance, blown up
   by one size whose runs need either 20 or 30 epochs, made its own tight
   runs count for little. A line predicts it needs more. Where the sizes
   need the same epochs (SQuAD) the line is flat and this is the mean again.

A run whose cost passes β × the best cost so far should be stopped
(:meth:`BatchSizeOptimizer.stop_cost_j`); it then counts as a failure whose cost
is at least that threshold.

The state is the ordered list of reported runs. With a store it lives there
(namespace ``batch-size``, key = the job name) and is re-read on every call, so
a job that restarts, or runs on another machine, goes on where it left off.
Two reports written at the very same moment can race (read, append, write):
the last write wins.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.optimize.objective import check_eta, energy_time_cost
from greenml.optimize.pooling import boundary_avoiding_tau2, weighted_line
from greenml.store import open_store

if TYPE_CHECKING:
    from greenml.store.repository import Store

NAMESPACE = "batch-size"
STATE_VERSION = 1


@dataclass
class Snapshot:
    """What the optimizer knows after replaying the reported runs.

    Attributes:
        pruning: True while the pruning walk is not over.
        expecting: The size the pruning walk explores next (None once over).
        survivors: Sizes that reached the target during pruning.
        log_costs: Per size, the log-cost of each of its runs (failures censored).
        best_cost: Least cost of a run that reached the target (inf if none).
        epoch_costs: Per size, the log of each run's cost per epoch.
        log_epochs: Per size, the log of each run's epochs (failures censored as
            their log-cost is: log-cost − log cost per epoch).
        all_epochs: Every run that counted was reported with a positive number
            of epochs (the epoch model is used only then).
    """

    pruning: bool = True
    expecting: int | None = None
    survivors: list[int] = field(default_factory=list)
    log_costs: dict[int, list[float]] = field(default_factory=dict)
    best_cost: float = math.inf
    epoch_costs: dict[int, list[float]] = field(default_factory=dict)
    log_epochs: dict[int, list[float]] = field(default_factory=dict)
    all_epochs: bool = True


class BatchSizeOptimizer:
    """Picks the batch size of each recurrence of one job, and learns from its cost.

    Args:
        job: Name of the recurring job (the key of its state in the store).
        batch_sizes: The sizes the job can train with.
        default_batch_size: The size the user would use; exploration starts there.
        max_power_w: The GPU's largest power limit (P_max of the cost).
        eta: Weight of energy against time in the cost, in [0, 1].
        beta: A run is stopped once its cost passes beta × the best cost so far.
        seed: Seed of the Thompson draws (each draw is reproducible).
        store: None to keep the state in memory, a Store, or a store URL
            (opened for each call, so no connection is held during training).
        prior_log_std: Prior guess of the run-to-run spread of log-cost.
        prior_weight: How many runs' worth of evidence that guess carries.
        tau2_estimator: The between-size variance of the mean log-epochs, from
            the sizes' means and sampling variances (``math.inf``: no pooling).
            The default never returns zero;
            :func:`~greenml.optimize.pooling.dersimonian_laird_tau2` is the
            estimate greenml used before, kept to compare with. Used where
            the sizes' epochs are pooled toward their mean (``epoch_trend``
            off, or fewer than three sizes).
        epoch_trend: Pool each size's mean log-epochs toward a line in log
            batch size (three sizes or more) rather than toward their mean;
            τ² is then the boundary-avoiding estimate around that line.

    Raises:
        ConfigError: Bad sizes, eta, beta or power; or the store holds this job
            with other batch sizes (use :meth:`reset` to start over).
    """

    def __init__(
        self,
        job: str,
        batch_sizes: Sequence[int],
        default_batch_size: int,
        *,
        max_power_w: float,
        eta: float = 0.5,
        beta: float = 2.0,
        seed: int = 0,
        store: Store | str | None = None,
        prior_log_std: float = 0.1,
        prior_weight: float = 2.0,
        tau2_estimator: Callable[[Sequence[float], Sequence[float]], float] = (
            boundary_avoiding_tau2
        ),
        epoch_trend: bool = True,
    ) -> None:
        sizes = sorted(set(int(b) for b in batch_sizes))
        if not job:
            raise ConfigError("the job needs a name")
        if not sizes or sizes[0] <= 0:
            raise ConfigError(f"batch sizes must be positive integers, not {list(batch_sizes)}")
        if default_batch_size not in sizes:
            raise ConfigError(f"default batch size {default_batch_size} is not in {sizes}")
        if not max_power_w > 0:
            raise ConfigError(f"max_power_w must be positive, not {max_power_w}")
        if not beta > 1.0:
            raise ConfigError(f"beta must be greater than 1, not {beta}")
        if not (prior_log_std > 0 and prior_weight > 0):
            raise ConfigError("prior_log_std and prior_weight must be positive")
        self.job = job
        self.batch_sizes = sizes
        self.default_batch_size = default_batch_size
        self.max_power_w = float(max_power_w)
        self.eta = check_eta(eta)
        self.beta = float(beta)
        self.seed = seed
        self.prior_log_std = prior_log_std
        self.prior_weight = prior_weight
        self.tau2_estimator = tau2_estimator
        self.epoch_trend = epoch_trend
        self._store = store
        self._memory: dict[str, Any] | None = None
        self._load()  # checks a stored state against these batch sizes

    # -- the public calls -----------------------------------------------------

    def get_batch_size(self) -> int:
        """The batch size the next recurrence should train with."""
        runs = self._load()["runs"]
        snap = self._replay(runs)
        if snap.pruning and snap.expecting is not None:
            return snap.expecting
        candidates = snap.survivors or self.batch_sizes
        untried = [b for b in candidates if not snap.log_costs.get(b)]
        if untried:
            return untried[0]
        rng = random.Random(f"{self.seed}/{self.job}/{len(runs)}")  # reproducible per decision
        if snap.all_epochs:
            return self._thompson_epochs(candidates, snap, rng)
        return self._thompson_flat(candidates, snap, rng)

    def report(
        self,
        batch_size: int,
        energy_j: float,
        time_s: float,
        reached: bool,
        *,
        epochs: float | None = None,
    ) -> None:
        """Record one run: its batch size, energy, time and whether it reached the target.

        Args:
            batch_size: The size it trained with.
            energy_j: Energy it took (J).
            time_s: Time it took (s).
            reached: Whether it reached the target metric.
            epochs: How many epochs it trained (a stopped run: those it did).
                When every run gives it, the cost per epoch and the number of
                epochs are learnt apart (see the module's notes), which finds
                the best size in far fewer runs when the sizes need about the
                same epochs.

        Raises:
            ConfigError: Unknown batch size, negative energy or time, a run
                that reached the target in no time, or negative or infinite epochs.
        """
        if batch_size not in self.batch_sizes:
            raise ConfigError(f"batch size {batch_size} is not one of {self.batch_sizes}")
        if not (energy_j >= 0 and time_s >= 0) or math.isinf(energy_j + time_s):
            raise ConfigError(f"energy and time must be finite and >= 0, not {energy_j}, {time_s}")
        if reached and time_s <= 0:
            raise ConfigError("a run that reached its target must have taken some time")
        if epochs is not None and not (epochs >= 0 and math.isfinite(epochs)):
            raise ConfigError(f"epochs must be finite and >= 0, not {epochs}")
        state = self._load()
        run: dict[str, Any] = {"batch_size": batch_size, "energy_j": energy_j, "time_s": time_s}
        if epochs is not None:
            run["epochs"] = float(epochs)
        state["runs"].append({**run, "reached": bool(reached)})
        self._save(state)

    def stop_cost_j(self) -> float | None:
        """Early-stop threshold: β × the best cost so far (J), None before any success."""
        best = self._replay(self._load()["runs"]).best_cost
        return self.beta * best if math.isfinite(best) else None

    def should_stop(self, energy_j: float, time_s: float) -> bool:
        """Whether a run that has spent this much so far has passed the threshold."""
        limit = self.stop_cost_j()
        return limit is not None and self.cost(energy_j, time_s) > limit

    def cost(self, energy_j: float, time_s: float) -> float:
        """The energy–time cost of a run (J)."""
        return energy_time_cost(energy_j, time_s, self.eta, self.max_power_w)

    def snapshot(self) -> Snapshot:
        """What the optimizer knows now (phase, survivors, costs)."""
        return self._replay(self._load()["runs"])

    def best_batch_size(self) -> int | None:
        """The surviving size of least mean log-cost so far, None before any success."""
        snap = self.snapshot()
        seen = [b for b in snap.survivors if snap.log_costs.get(b)]
        return min(seen, key=lambda b: _mean(snap.log_costs[b])) if seen else None

    def reset(self) -> None:
        """Forget every run of this job (for example after changing its batch sizes)."""
        self._save(self._fresh())

    # -- the policy -------------------------------------------------------------

    def _replay(self, runs: list[dict[str, Any]]) -> Snapshot:
        idx = self.batch_sizes.index(self.default_batch_size)
        walks = [self.batch_sizes[idx::-1], self.batch_sizes[idx + 1 :]]
        snap = Snapshot(expecting=walks[0][0])
        walk, step = 0, 0
        rises: list[float] = []  # costs along the current walk, from the default outwards
        for run in runs:
            b, reached = int(run["batch_size"]), bool(run["reached"])
            cost = self.cost(float(run["energy_j"]), float(run["time_s"]))
            if not reached and math.isfinite(snap.best_cost):
                cost = max(cost, self.beta * snap.best_cost)  # censored: it would have cost more
            if cost > 0:
                snap.log_costs.setdefault(b, []).append(math.log(cost))
                epochs = run.get("epochs")
                if epochs is not None and float(epochs) > 0:
                    raw = self.cost(float(run["energy_j"]), float(run["time_s"]))
                    per_epoch = math.log(raw / float(epochs)) if raw > 0 else math.log(cost)
                    snap.epoch_costs.setdefault(b, []).append(per_epoch)
                    snap.log_epochs.setdefault(b, []).append(math.log(cost) - per_epoch)
                else:
                    snap.all_epochs = False
            if reached:
                snap.best_cost = min(snap.best_cost, cost)
            if not snap.pruning or b != snap.expecting:
                continue  # a concurrent run of another size: learnt from, walk unchanged
            if reached:
                snap.survivors.append(b)
                step += 1
                rises.append(cost)
            if not reached or step >= len(walks[walk]) or self._climbed(rises, snap.best_cost):
                walk, step = walk + 1, 0
                rises = rises[:1]  # the up walk starts from the default's cost
                while walk < len(walks) and not walks[walk]:
                    walk += 1
            if walk >= len(walks):
                snap.pruning, snap.expecting = False, None
            else:
                snap.expecting = walks[walk][step]
        snap.survivors.sort()
        return snap

    def _climbed(self, costs: list[float], best_cost: float) -> bool:
        """Two rises in a row, the last above halfway to the early-stop threshold.

        Cost is taken as unimodal in the batch size (the premise of the walk);
        a single noisy run cannot end a walk this way, two rises are needed.
        """
        if len(costs) < 3:
            return False
        return costs[-1] > costs[-2] > costs[-3] and costs[-1] > (1 + self.beta) / 2 * best_cost

    def _sample_variance(self, groups: dict[int, list[float]], rng: random.Random) -> float:
        """A draw of the noise variance shared by the groups (inverse-gamma posterior)."""
        squares, dof = 0.0, 0
        for values in groups.values():
            mean = _mean(values)
            squares += sum((v - mean) ** 2 for v in values)
            dof += len(values) - 1
        shape = (self.prior_weight + dof) / 2.0
        scale = (self.prior_weight * self.prior_log_std**2 + squares) / 2.0
        return scale / rng.gammavariate(shape, 1.0)

    def _thompson_flat(self, candidates: list[int], snap: Snapshot, rng: random.Random) -> int:
        """Each size's log-cost on its own: N(μ_b, σ²), σ² shared."""
        variance = self._sample_variance(snap.log_costs, rng)
        draws = {
            b: rng.gauss(_mean(snap.log_costs[b]), math.sqrt(variance / len(snap.log_costs[b])))
            for b in candidates
        }
        return min(draws, key=lambda b: (draws[b], b))

    def _thompson_epochs(self, candidates: list[int], snap: Snapshot, rng: random.Random) -> int:
        """Log cost per epoch per size, plus log-epochs shrunk toward the mean over sizes."""
        cost_var = self._sample_variance(snap.epoch_costs, rng)
        epoch_var = self._sample_variance(snap.log_epochs, rng)
        means = {b: _mean(snap.log_epochs[b]) for b in candidates}
        within = {b: epoch_var / len(snap.log_epochs[b]) for b in candidates}
        logs = [math.log(b) for b in candidates] if self.epoch_trend else None
        if logs is not None and len(candidates) >= 3:
            tau2 = boundary_avoiding_tau2(
                [means[b] for b in candidates], [within[b] for b in candidates], logs
            )
        else:
            logs = None
            tau2 = self.tau2_estimator(
                [means[b] for b in candidates], [within[b] for b in candidates]
            )
        expected = dict.fromkeys(candidates, 0.0)  # what the sizes' pattern says of each
        # The level of the mean (or line) over sizes is drawn from its posterior; the slope is
        # taken at its estimate: drawn, it tilted every size's epochs at once and sent more
        # recurrences to the end sizes where epochs are flat (SQuAD), for no gain elsewhere.
        if math.isfinite(tau2):
            line = weighted_line(
                [means[b] for b in candidates],
                [1.0 / (within[b] + tau2) for b in candidates],
                logs,
            )
            level = rng.gauss(line.centre_y, math.sqrt(1.0 / line.weight))
            slope = line.slope
            for b in candidates:
                expected[b] = level + slope * (math.log(b) - line.centre_x) if logs else level
        draws = {}
        for b in candidates:
            if tau2 <= 0:  # every size shares the mean
                epochs = expected[b]
            else:  # its own runs and the sizes' pattern, weighed by their precisions
                precision = 1.0 / within[b] + 1.0 / tau2
                centre = (means[b] / within[b] + expected[b] / tau2) / precision
                epochs = rng.gauss(centre, math.sqrt(1.0 / precision))
            per_epoch = snap.epoch_costs[b]
            draws[b] = rng.gauss(_mean(per_epoch), math.sqrt(cost_var / len(per_epoch))) + epochs
        return min(draws, key=lambda b: (draws[b], b))

    # -- state ------------------------------------------------------------------

    def _fresh(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "batch_sizes": self.batch_sizes,
            "default_batch_size": self.default_batch_size,
            "runs": [],
        }

    def _load(self) -> dict[str, Any]:
        if self._store is None:
            if self._memory is None:
                self._memory = self._fresh()
            return self._memory
        if isinstance(self._store, str):
            with open_store(self._store) as store:
                state = store.get_state(NAMESPACE, self.job)
        else:
            state = self._store.get_state(NAMESPACE, self.job)
        if state is None:
            return self._fresh()
        if (
            state.get("batch_sizes") != self.batch_sizes
            or state.get("default_batch_size") != self.default_batch_size
        ):
            raise ConfigError(
                f"job {self.job!r} was explored with batch sizes {state.get('batch_sizes')} "
                f"(default {state.get('default_batch_size')}); pass the same, or reset() it"
            )
        if not isinstance(state.get("runs"), list):
            raise ConfigError(f"the stored state of job {self.job!r} is not a batch-size state")
        return state

    def _save(self, state: dict[str, Any]) -> None:
        if self._store is None:
            self._memory = state
        elif isinstance(self._store, str):
            with open_store(self._store) as store:
                store.put_state(NAMESPACE, self.job, state)
        else:
            self._store.put_state(NAMESPACE, self.job, state)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
