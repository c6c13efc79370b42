"""Runs loaded for a report, and their totals.

Uncertainty of totals
---------------------
One rule, :mod:`greenml.measure.combine`, as ``greenml jobs show`` uses: runs
measured by the same methods and device models (the same NVML counter, the same
CPU model) share their error, so their absolute uncertainties **add linearly**;
runs measured differently are independent and combine in quadrature. Carbon
likewise: runs with the same intensity source and location share the
intensity's error (linear), others are independent. The PUE is taken as exact.

Nothing unknown is counted as zero: runs whose carbon, cost or energy is
unknown are listed, and totals say for how many runs they are known.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.measure.combine import combine, energy_source
from greenml.report import records as rec
from greenml.report.records import Missing

if TYPE_CHECKING:
    from greenml.store.repository import Store


@dataclass
class Total:
    """A sum over runs with its absolute uncertainty, and which runs it covers."""

    value: float = 0.0
    uncertainty: float = 0.0
    known: list[str] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    parts: list[tuple[Hashable, float]] = field(default_factory=list)

    @property
    def uncertainty_rel(self) -> float | None:
        return self.uncertainty / self.value if self.value else None

    @property
    def complete(self) -> bool:
        return not self.missing

    def coverage(self) -> str:
        """``known for 3 of 4 runs`` (empty when known for all)."""
        if not self.missing:
            return ""
        n = len(self.known)
        return f"known for {n} of {n + len(self.missing)} runs"


@dataclass
class DeviceUse:
    """Hours of one device type over the runs."""

    name: str
    hours: float = 0.0
    max_count: int = 0
    runs: list[str] = field(default_factory=list)


class RunSet:
    """Run records and their aggregates (energy in joules, carbon in kg, cost in USD).

    Attributes:
        records: The run records, oldest first.
        it_energy: IT energy (devices measured), J.
        facility_energy: IT energy × each run's PUE, J.
        carbon: kg CO2eq over the runs whose carbon is known.
        cost: US dollars over the runs whose cost is known.
        energy_unknown: Runs with no device energy at all.
        run_seconds: Sum of the runs' wall-clock durations.
        devices: GPU type → device-hours, peak count per run.
        cpus: CPU models seen.
        methods: Measurement method → joules (``counter``, ``power-integrated``, ``estimated``).
        components: Component → (joules, absolute uncertainty).
        intensities: One entry per intensity source: source, kind, scope,
            resolution, effective g/kWh, runs.
        pues: One entry per PUE used: value, source, runs.
    """

    def __init__(
        self,
        records: Sequence[dict[str, Any]],
        store: Store | None = None,
        *,
        project_id: int | None = None,
    ) -> None:
        self.records = sorted(records, key=lambda r: (r.get("started_at") or "", r["id"]))
        self._store = store
        self.project_id = project_id  # a team server's project: what the store says is scoped
        self.it_energy = Total()
        self.facility_energy = Total()
        self.carbon = Total()
        self.cost = Total()
        self.energy_unknown: list[Missing] = []
        self.run_seconds = 0.0
        self.devices: dict[str, DeviceUse] = {}
        self.cpus: list[str] = []
        self.methods: dict[str, float] = {}
        self.components: dict[str, tuple[float, float]] = {}
        self.intensities: list[dict[str, Any]] = []
        self.pues: list[dict[str, Any]] = []
        self.carbon_market = Total()
        self.embodied = Total()
        self.water = Total()
        self.offsets_kg = 0.0
        self.flops = Total()
        self.flops_methods: dict[str, int] = {}  # counted / given → runs
        for record in self.records:
            self._add(record)

    # -- aggregation ------------------------------------------------------------------

    def _add(self, record: dict[str, Any]) -> None:
        run_id = record["id"]
        it_j, it_unc = rec.it_energy(record)
        if rec.energy_known(record):
            pue_value, pue_source = rec.pue(record)
            source = energy_source(
                {"method": method, "name": name}
                for _c, _k, name, _j, _r, method in rec.devices(record)
            )
            _add(self.it_energy, run_id, it_j, it_unc, source)
            _add(self.facility_energy, run_id, it_j * pue_value, it_unc * pue_value, source)
            _group(self.pues, {"pue": pue_value, "source": pue_source}, run_id)
        else:
            why = (record.get("energy") or {}).get("note") or "no device energy recorded"
            self.energy_unknown.append(Missing(run_id, record.get("status", "?"), str(why)))
            self.it_energy.missing.append(self.energy_unknown[-1])
            self.facility_energy.missing.append(self.energy_unknown[-1])
        carbon = rec.carbon(record)
        if isinstance(carbon, Missing):
            self.carbon.missing.append(carbon)
        else:
            block = record["carbon"]
            _add(self.carbon, run_id, *carbon, (block.get("source"), block.get("location")))
            key = {k: block.get(k) for k in ("source", "kind", "scope", "resolution")}
            entry = _group(self.intensities, key, run_id)
            entry["kg"] = entry.get("kg", 0.0) + carbon[0]
            entry["facility_kwh"] = entry.get("facility_kwh", 0.0) + float(
                block.get("facility_energy_kwh") or 0.0
            )
        cost = rec.cost(record)
        if isinstance(cost, Missing):
            self.cost.missing.append(cost)
        else:
            _add(self.cost, run_id, cost, 0.0)
        self._add_hardware(record)
        self._add_footprint(record)

    def _add_footprint(self, record: dict[str, Any]) -> None:
        """Market-based and embodied carbon, water: apart from the location-based total."""
        for total, key, name in ((self.carbon_market, "carbon_market", "kg"),
                                 (self.embodied, "embodied", "kg"),
                                 (self.water, "water", "litres")):  # fmt: skip
            figure = rec.block_figure(record, key, name)
            if isinstance(figure, Missing):
                total.missing.append(figure)
            else:
                _add(total, record["id"], *figure)
        self.offsets_kg += float((record.get("carbon_market") or {}).get("offsets_kg") or 0.0)
        work = rec.block_figure(record, "flops", "flops")
        if isinstance(work, Missing):
            self.flops.missing.append(work)
        else:
            _add(self.flops, record["id"], *work)
            method = str((record.get("flops") or {}).get("method") or "given")
            self.flops_methods[method] = self.flops_methods.get(method, 0) + 1

    def _add_hardware(self, record: dict[str, Any]) -> None:
        seconds = rec.duration_s(record) or 0.0
        self.run_seconds += seconds
        counts: dict[str, int] = {}
        for comp, _key, name, joules, rel, method in rec.devices(record):
            self.methods[method] = self.methods.get(method, 0.0) + joules
            j, u = self.components.get(comp, (0.0, 0.0))
            self.components[comp] = (j + joules, u + joules * rel)
            if comp == "gpu":
                gpu = rec.gpu_type(name)
                counts[gpu] = counts.get(gpu, 0) + 1
        for gpu, count in counts.items():
            use = self.devices.setdefault(gpu, DeviceUse(gpu))
            use.hours += count * seconds / 3600.0
            use.max_count = max(use.max_count, count)
            use.runs.append(record["id"])
        cpu = rec.cpu_name(record)
        if cpu and cpu not in self.cpus:
            self.cpus.append(cpu)

    # -- reading ------------------------------------------------------------------------

    @property
    def ids(self) -> list[str]:
        return [r["id"] for r in self.records]

    @property
    def first_start_s(self) -> float | None:
        starts = [rec.timestamp(r.get("started_at")) for r in self.records]
        return min((s for s in starts if s is not None), default=None)

    @property
    def last_end_s(self) -> float | None:
        ends = []
        for r in self.records:
            start, seconds = rec.timestamp(r.get("started_at")), rec.duration_s(r)
            end = rec.timestamp(r.get("ended_at"))
            ends.append(
                end if end is not None else (start + seconds if start and seconds else None)
            )
        return max((e for e in ends if e is not None), default=None)

    @property
    def span_s(self) -> float | None:
        """Wall-clock time from the first start to the last end."""
        start, end = self.first_start_s, self.last_end_s
        return end - start if start is not None and end is not None else None

    def method_shares(self) -> dict[str, float]:
        """Share of the device energy obtained by each method (sums to 1)."""
        total = sum(self.methods.values())
        return {m: j / total for m, j in self.methods.items()} if total > 0 else {}

    def intensity_g_per_kwh(self) -> float | None:
        """Effective intensity over the runs with known carbon: grams ÷ facility kWh."""
        kwh = sum(e.get("facility_kwh", 0.0) for e in self.intensities)
        return self.carbon.value * 1000 / kwh if kwh > 0 else None

    def gpu_names(self) -> list[str]:
        return list(self.devices)

    def state(self, namespace: str, key: str) -> dict[str, Any] | None:
        """An advisor's document from the store the runs came from (None without one)."""
        return self._store.get_state(namespace, key) if self._store is not None else None

    def all_in_project(self, run_ids: Sequence[str]) -> bool:
        """Whether every one of ``run_ids`` (at least one) is a run of :attr:`project_id`."""
        if self._store is None or self.project_id is None or not run_ids:
            return False
        from greenml.store.query import project_of_run

        return all(
            isinstance(i, str) and project_of_run(self._store, i) == self.project_id
            for i in run_ids
        )

    def samples(self, run_id: str) -> list[dict[str, Any]]:
        """The stored power samples of one run (empty without a store)."""
        return self._store.samples(run_id) if self._store is not None else []

    def to_dict(self) -> dict[str, Any]:
        """The aggregates, JSON-ready (kWh, kg, hours at this edge)."""
        kwh = 3.6e6
        return {
            "runs": len(self.records),
            "run_ids": self.ids,
            "it_energy_kwh": self.it_energy.value / kwh,
            "it_energy_uncertainty_kwh": self.it_energy.uncertainty / kwh,
            "facility_energy_kwh": self.facility_energy.value / kwh,
            "facility_energy_uncertainty_kwh": self.facility_energy.uncertainty / kwh,
            "energy_unknown": [m.to_dict() for m in self.energy_unknown],
            "co2eq_kg": self.carbon.value if self.carbon.known else None,
            "co2eq_uncertainty_kg": self.carbon.uncertainty if self.carbon.known else None,
            "carbon_known_runs": len(self.carbon.known),
            "carbon_missing": [m.to_dict() for m in self.carbon.missing],
            "cost_usd": self.cost.value if self.cost.known else None,
            "cost_known_runs": len(self.cost.known),
            "intensity_g_per_kwh": self.intensity_g_per_kwh(),
            "intensity_sources": self.intensities,
            "pues": self.pues,
            "run_hours": self.run_seconds / 3600,
            "span_hours": self.span_s / 3600 if self.span_s is not None else None,
            "device_hours": {d.name: d.hours for d in self.devices.values()},
            "max_devices_per_run": {d.name: d.max_count for d in self.devices.values()},
            "cpus": self.cpus,
            "method_shares": self.method_shares(),
            "component_energy_kwh": {c: j / kwh for c, (j, _u) in self.components.items()},
            "co2eq_market_kg": _known(self.carbon_market),
            "co2eq_market_known_runs": len(self.carbon_market.known),
            "co2eq_embodied_kg": _known(self.embodied),
            "co2eq_embodied_known_runs": len(self.embodied.known),
            "water_l": _known(self.water),
            "water_known_runs": len(self.water.known),
            "offsets_kg_not_subtracted": self.offsets_kg,
            "flops": _known(self.flops),
            "flops_known_runs": len(self.flops.known),
            "flops_methods": self.flops_methods,
        }


def _known(total: Total) -> float | None:
    return total.value if total.known else None


def _add(
    total: Total, run_id: str, value: float, uncertainty: float, source: Hashable = "same"
) -> None:
    """Add a run's figure; its uncertainty combines by :func:`greenml.measure.combine.combine`."""
    total.value += value
    total.parts.append((source, uncertainty))
    total.uncertainty = combine(total.parts)
    total.known.append(run_id)


def _group(groups: list[dict[str, Any]], key: dict[str, Any], run_id: str) -> dict[str, Any]:
    for entry in groups:
        if all(entry.get(k) == v for k, v in key.items()):
            entry["runs"].append(run_id)
            return entry
    entry = {**key, "runs": [run_id]}
    groups.append(entry)
    return entry


def load_runs(store: Store, ids: Sequence[str] = (), tag: dict[str, str] | None = None) -> RunSet:
    """The runs named by id (or id prefix) and all runs carrying every ``tag`` pair.

    Raises:
        RunNotFound: An id matches no run.
        StoreError: An id prefix matches several runs.
        ConfigError: Neither ids nor a tag given, or no run carries the tag.
    """
    if not ids and not tag:
        raise ConfigError("no runs given: pass run ids or --tag KEY=VALUE")
    found: dict[str, dict[str, Any]] = {}
    for run_id in ids:
        record = store.get_record(run_id)
        found.setdefault(record["id"], record)
    if tag:
        tagged = store.list_runs(limit=0, tag=tag)
        if not tagged:
            pairs = ", ".join(f"{k}={v}" for k, v in tag.items())
            raise ConfigError(f"no runs carry the tag {pairs}")
        for row in tagged:
            if row["id"] not in found:
                found[row["id"]] = store.get_record(row["id"])
    return RunSet(list(found.values()), store)
