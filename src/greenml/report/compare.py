"""Groups of runs compared: means per unit of work, their uncertainty, and changes between groups.

Uncertainty rules, shared by the savings report and the CI energy gate:

- **One group's mean.** Each run gives a value per unit of work (energy,
  CO2eq or cost ÷ its work; per run when no work is known), with the run's own
  relative uncertainty (``energy.uncertainty_rel``, ``carbon.uncertainty_rel``,
  ``cost.uncertainty_rel``). The group's value is the plain mean of its runs.
  Its relative uncertainty is the **larger** of
  (a) the measurement uncertainty, the value-weighted mean of the runs' relative
  uncertainties — runs of one setup share their sensors, so these errors are
  taken as fully correlated and do not shrink with more runs — and
  (b) the spread between runs, the standard error of the mean
  (sample standard deviation ÷ √n; zero for a single run).
  The larger, not the sum: a spread larger than the sensors' stated error says
  the error is mostly run-to-run noise, and then the spread is the error.
- **A change between groups.** ``ratio = new ÷ base``; its relative uncertainty
  combines the two groups' relative uncertainties in quadrature (independent);
  the change ``ratio − 1`` has the uncertainty ``ratio × √(u_base² + u_new²)``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from greenml.errors import ConfigError
from greenml.report.work import work_of

Metric = Literal["energy", "carbon", "cost"]
METRICS: tuple[Metric, ...] = ("energy", "carbon", "cost")
_ACCOUNTED: tuple[tuple[Metric, str, float], ...] = (("carbon", "kg", 1000.0), ("cost", "usd", 1.0))
"""Record blocks read besides energy: metric (= block key), field, factor to base units."""


@dataclass(frozen=True)
class Amount:
    """One run's figure for one metric: base unit (J, g CO2eq, USD) and relative uncertainty."""

    value: float
    uncertainty_rel: float


@dataclass(frozen=True)
class RunFigures:
    """What one run contributes to a comparison.

    Attributes:
        run_id: The run's id.
        work: Its amount of work in the comparison's unit, ``None`` when per run.
        amounts: Energy (J), carbon (g) and cost (USD) that are known.
        missing: Why a metric is unknown, by metric.
    """

    run_id: str
    work: float | None
    amounts: dict[Metric, Amount]
    missing: dict[Metric, str]


@dataclass(frozen=True)
class Estimate:
    """A group's mean per unit of work (or per run) with its uncertainty.

    Attributes:
        value: The mean, in base units (J, g, USD) per unit of work or per run.
        uncertainty_rel: ``max(spread_rel, measurement_rel)``.
        spread_rel: Standard error of the mean ÷ mean (0 for one run).
        measurement_rel: The runs' stated uncertainty (value-weighted mean).
        n: Number of runs.
    """

    value: float
    uncertainty_rel: float
    spread_rel: float
    measurement_rel: float
    n: int

    @property
    def uncertainty(self) -> float:
        """The absolute uncertainty, in the value's unit."""
        return abs(self.value) * self.uncertainty_rel


@dataclass(frozen=True)
class Change:
    """``new`` against ``base``: ratio, relative change and its uncertainty."""

    ratio: float
    change_rel: float
    uncertainty_rel: float

    @property
    def significant(self) -> bool:
        """Whether the change exceeds its combined uncertainty."""
        return abs(self.change_rel) > self.uncertainty_rel


def records_of(runs: Any) -> list[dict[str, Any]]:
    """The run records of a RunSet (its ``records``) or of a list of records.

    Raises:
        ConfigError: No runs, or something that is not a run record.
    """
    records = list(getattr(runs, "records", runs))
    if not records:
        raise ConfigError("no runs given")
    for record in records:
        if not isinstance(record, dict) or "id" not in record:
            raise ConfigError("not a greenml run record (a JSON object with an id)")
    return records


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _energy(record: Mapping[str, Any], run: str) -> Amount:
    energy = record.get("energy")
    if not isinstance(energy, Mapping):
        raise ConfigError(f"run {run} has no energy block: not a greenml run record")
    total, rel = _number(energy.get("total_j")), _number(energy.get("uncertainty_rel"))
    if total is None or total < 0:
        raise ConfigError(f"run {run} has no energy total (energy.total_j)")
    if rel is None or rel < 0:
        raise ConfigError(f"run {run} states no energy uncertainty (energy.uncertainty_rel)")
    return Amount(total, rel)


def _accounted(record: Mapping[str, Any], key: str, field: str, scale: float) -> Amount | str:
    block = record.get(key)
    if not isinstance(block, Mapping):
        return f"no {key} recorded"
    if block.get("status") != "ok":
        return str(block.get("reason") or f"{key} {block.get('status', 'unknown')}")
    value, rel = _number(block.get(field)), _number(block.get("uncertainty_rel"))
    if value is None or rel is None:
        return f"{key} has no {field} with its uncertainty"
    return Amount(value * scale, rel)


def run_figures(record: Mapping[str, Any], unit: str | None) -> RunFigures:
    """The energy, carbon and cost of one completed run, with its work in ``unit``.

    Raises:
        ConfigError: The run did not complete, has no energy total or uncertainty,
            or states no work in ``unit``.
    """
    run = str(record.get("id") or "?")
    status = record.get("status")
    if status != "completed":
        state = status or "of unknown status"
        raise ConfigError(f"run {run} is {state}: only completed runs are compared")
    work: float | None = None
    if unit is not None:
        found = work_of(record, unit)
        if found is None:
            raise ConfigError(f"run {run} states no work in {unit}")
        work = found.amount
    amounts: dict[Metric, Amount] = {"energy": _energy(record, run)}
    missing: dict[Metric, str] = {}
    for metric, field, scale in _ACCOUNTED:
        got = _accounted(record, metric, field, scale)
        if isinstance(got, Amount):
            amounts[metric] = got
        else:
            missing[metric] = got
    return RunFigures(run, work, amounts, missing)


def estimate(values: Sequence[float], uncertainties_rel: Sequence[float]) -> Estimate:
    """A group's mean with the larger of its spread and its measurement uncertainty.

    Args:
        values: One value per run (per unit of work or per run).
        uncertainties_rel: Each run's relative uncertainty.

    Raises:
        ConfigError: No values, or not one uncertainty per value.
    """
    if not values:
        raise ConfigError("no runs to compare")
    if len(uncertainties_rel) != len(values):
        raise ConfigError("one uncertainty per value is needed")
    n = len(values)
    mean = statistics.fmean(values)
    weight = sum(abs(v) for v in values)
    if weight > 0:
        pairs = zip(values, uncertainties_rel, strict=True)
        measurement = sum(abs(v) * u for v, u in pairs) / weight
    else:
        measurement = max(uncertainties_rel)
    spread = 0.0
    if n > 1 and mean != 0:
        spread = statistics.stdev(values) / math.sqrt(n) / abs(mean)
    return Estimate(mean, max(spread, measurement), spread, measurement, n)


def group_estimate(runs: Sequence[RunFigures], metric: Metric) -> Estimate | str:
    """The group's :class:`Estimate` for a metric, or why it is unknown."""
    for run in runs:
        if metric in run.missing:
            return f"run {run.run_id}: {run.missing[metric]}"
    values = [r.amounts[metric].value / (r.work if r.work is not None else 1.0) for r in runs]
    return estimate(values, [r.amounts[metric].uncertainty_rel for r in runs])


def change(base: Estimate, new: Estimate, same_setup: bool = False) -> Change:
    """How ``new`` differs from ``base`` (see the module notes for the uncertainty).

    With ``same_setup`` (every run measured by the same devices and methods, see
    :func:`same_setup`) and two runs or more a side, the measurement's
    systematic error — a model's TDP 30 % off — is common to both sides and
    cancels in the ratio: only the run-to-run spread remains. With one run a
    side that spread is unknown and the stated uncertainties are combined.

    Raises:
        ConfigError: The base value is zero (nothing to compare against).
    """
    if base.value <= 0:
        raise ConfigError("the baseline's value is zero: there is nothing to compare against")
    ratio = new.value / base.value
    if same_setup and base.n >= 2 and new.n >= 2:
        combined = math.hypot(base.spread_rel, new.spread_rel)
    else:
        combined = math.hypot(base.uncertainty_rel, new.uncertainty_rel)
    return Change(ratio, ratio - 1.0, abs(ratio) * combined)


def same_setup(records: Sequence[Mapping[str, Any]]) -> bool:
    """Whether every run was measured by the same devices with the same methods."""
    return len({_setup(record) for record in records}) == 1


def _setup(record: Mapping[str, Any]) -> frozenset[tuple[str, str, str, str]]:
    components = (record.get("energy") or {}).get("components") or {}
    return frozenset(
        (component, key, str(device.get("name", "")), str(device.get("method", "")))
        for component, block in components.items()
        for key, device in (block.get("devices") or {}).items()
    )
