"""The green-practice audit: the guides' checklist against what the run store knows.

Each item is ``passed``, ``failed`` or ``unknown`` (the store cannot tell), with
its evidence and what is at stake (kWh, USD, kg CO2eq where a figure can be
computed), grouped by Google's 4Ms (Patterson et al., "The Carbon Footprint of
Machine Learning Training Will Plateau, Then Shrink", IEEE Computer 2022):
**model** (efficient architectures, precision), **machine** (the right
hardware, used fully), **mechanization** (the data centre and the practices
around the jobs: reproducible environments, CI energy gates, monitoring,
spot capacity with checkpoints) and **map** (where and when jobs run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from greenml.quantities import J_PER_KWH

GROUPS = ("model", "machine", "mechanization", "map")
IDLE_BELOW = 0.15
UNDERUSED_BELOW = 0.50
LONG_JOB_S = 4 * 3600.0
EFFICIENT_PUE = 1.2
REDUCED_PRECISIONS = {"fp16", "bf16", "int8", "fp8", "float16", "bfloat16", "half", "int4"}


@dataclass(frozen=True)
class Item:
    """One checklist item's verdict.

    Attributes:
        group: One of :data:`GROUPS`.
        key: A short stable name (``idle-gpus``).
        title: What the guides ask for.
        status: ``passed``, ``failed`` or ``unknown``.
        evidence: What the store shows.
        energy_j: Energy at stake (facility), if a figure can be computed.
        usd: Cost at stake, if known.
        co2_g: CO2eq at stake, if known.
        fix: What to do.
        uncertainty_rel: The relative uncertainty of the energy at stake (the GPU
            energy's, combined by :mod:`greenml.measure.combine`); ``None`` when unknown.
    """

    group: str
    key: str
    title: str
    status: str
    evidence: str
    energy_j: float | None = None
    usd: float | None = None
    co2_g: float | None = None
    fix: str = ""
    uncertainty_rel: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "key": self.key,
            "title": self.title,
            "status": self.status,
            "evidence": self.evidence,
            "energy_kwh_at_stake": None if self.energy_j is None else self.energy_j / J_PER_KWH,
            "uncertainty_rel_at_stake": self.uncertainty_rel,
            "usd_at_stake": self.usd,
            "co2_kg_at_stake": None if self.co2_g is None else self.co2_g / 1000,
            "fix": self.fix,
        }


@dataclass(frozen=True)
class Audit:
    """Every item, for the runs it looked at."""

    runs: tuple[str, ...]
    items: tuple[Item, ...]
    scope: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def counts(self) -> dict[str, int]:
        out = {"passed": 0, "failed": 0, "unknown": 0}
        for item in self.items:
            out[item.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "runs": list(self.runs),
            "counts": self.counts(),
            "items": [i.to_dict() for i in self.items],
            "notes": list(self.notes),
        }


Samples = Callable[[str], list[dict[str, Any]]]


def audit(
    records: Sequence[dict[str, Any]],
    samples: Samples,
    gate_verdicts: Sequence[dict[str, Any]] = (),
    scope: str = "all runs",
) -> Audit:
    """Evaluate the checklist on ``records`` (with their ``samples`` and stored gate verdicts)."""
    done = [r for r in records if r.get("status") == "completed"]
    items = [
        _precision(done),
        *_gpu_use(done, samples),
        _environment(done),
        _ci_gate(done, gate_verdicts),
        _monitoring(done),
        _spot(done),
        _pue(done),
        _location(done),
        _carbon_aware(done),
        _clean_grid(done),
    ]
    notes = () if done else ("no completed run in scope: every item is unknown",)
    return Audit(tuple(str(r["id"]) for r in done), tuple(items), scope, notes)


# --- helpers ------------------------------------------------------------------------------


def _gpu_j(record: dict[str, Any]) -> float:
    gpu = ((record.get("energy") or {}).get("components") or {}).get("gpu") or {}
    return float(gpu.get("energy_j") or 0.0)


def _pue_of(record: dict[str, Any]) -> float:
    value = (record.get("carbon") or {}).get("pue")
    return float(value) if isinstance(value, (int, float)) else 1.0


def _usd_per_j(record: dict[str, Any]) -> float | None:
    cost = record.get("cost") or {}
    energy = float((record.get("energy") or {}).get("total_j") or 0.0)
    usd = cost.get("usd")
    if cost.get("status") != "ok" or not isinstance(usd, (int, float)) or energy <= 0:
        return None
    return float(usd) / energy


def _ci(record: dict[str, Any]) -> float | None:
    carbon = record.get("carbon") or {}
    value = carbon.get("intensity_g_per_kwh")
    if carbon.get("status") != "ok" or not isinstance(value, (int, float)):
        return None
    return float(value)


Stake = tuple[float | None, float | None, float | None]


def _stake(pairs: list[tuple[dict[str, Any], float]]) -> Stake:
    """Facility energy, USD and CO2eq at stake for (record, IT joules) pairs."""
    if not pairs:
        return None, None, None
    energy = sum(j * _pue_of(r) for r, j in pairs)
    prices = [(_usd_per_j(r), j) for r, j in pairs]
    usd = None
    if all(p is not None for p, _ in prices):
        usd = sum((p or 0.0) * j for p, j in prices)
    cis = [(_ci(r), j * _pue_of(r)) for r, j in pairs]
    co2 = None
    if all(c is not None for c, _ in cis):
        co2 = sum((c or 0.0) * j / J_PER_KWH for c, j in cis)
    return energy, usd, co2


def _stake_rel(pairs: list[tuple[dict[str, Any], float]]) -> float | None:
    """The energy at stake's relative uncertainty: each run's GPU energy error, by source."""
    from greenml.measure.combine import combine, energy_source

    total = sum(j * _pue_of(r) for r, j in pairs)
    if total <= 0:
        return None
    parts = []
    for record, joules in pairs:
        gpu = ((record.get("energy") or {}).get("components") or {}).get("gpu") or {}
        rel = gpu.get("uncertainty_rel")
        if not isinstance(rel, (int, float)):
            return None
        source = energy_source((gpu.get("devices") or {}).values()) or record.get("id")
        parts.append((source, joules * _pue_of(record) * float(rel)))
    return combine(parts) / total


def _ids(records: Sequence[dict[str, Any]], limit: int = 4) -> str:
    ids = [str(r["id"])[:8] for r in records]
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


# --- model --------------------------------------------------------------------------------


def _precision(records: Sequence[dict[str, Any]]) -> Item:
    title = "Reduced precision or compression tried (mixed precision, quantization, pruning)"
    tagged = []
    for r in records:
        tags = {k.lower(): str(v).lower() for k, v in (r.get("tags") or {}).items()}
        reduced = {tags.get("precision"), tags.get("dtype")} & REDUCED_PRECISIONS
        compressed = any(k in tags for k in ("compress", "quantized", "pruned", "distilled"))
        if reduced or compressed:
            tagged.append(r)
    if tagged:
        return Item("model", "precision", title, "passed",
                    f"{len(tagged)} run(s) tagged with a reduced precision or a compression: "
                    f"{_ids(tagged)}")  # fmt: skip
    fp32_gpu = [r for r in records if _gpu_j(r) > 0]
    if not fp32_gpu:
        return Item("model", "precision", title, "unknown",
                    "no GPU run and no precision/compress tag on any run",
                    fix="tag runs with precision=bf16 (greenml run --tag precision=…)")  # fmt: skip
    energy, usd, co2 = _stake([(r, _gpu_j(r) * 0.5) for r in fp32_gpu])
    return Item(
        "model", "precision", title, "failed",
        f"{len(fp32_gpu)} GPU run(s) with no reduced-precision or compression tag: "
        f"{_ids(fp32_gpu)}; at stake: half their GPU energy (an upper bound: mixed precision "
        "about halves the compute-bound part)",
        energy, usd, co2,
        "try bf16/fp16 autocast (greenml optimize sweep) or greenml compress; tag the runs",
        _stake_rel([(r, _gpu_j(r) * 0.5) for r in fp32_gpu]),
    )  # fmt: skip


# --- machine ------------------------------------------------------------------------------


def _activity(rows: list[dict[str, Any]]) -> list[float]:
    """GPU activity per sample: SM activity where sampled, else NVML utilization."""
    out = []
    for s in rows:
        if str(s.get("component")) != "gpu":
            continue
        value = s.get("sm_activity")
        value = s.get("utilization") if value is None else value
        if isinstance(value, (int, float)) and math.isfinite(value):
            out.append(float(value))
    return out


def _gpu_use(records: Sequence[dict[str, Any]], samples: Samples) -> list[Item]:
    idle_title = f"No idle GPUs (activity under {IDLE_BELOW:.0%} while a job holds them)"
    under_title = f"GPUs used fully (mean activity at least {UNDERUSED_BELOW:.0%})"
    gpu_runs = [r for r in records if _gpu_j(r) > 0]
    idle_pairs: list[tuple[dict[str, Any], float]] = []
    under: list[tuple[dict[str, Any], float]] = []
    measured = 0
    for r in gpu_runs:
        activity = _activity(samples(str(r["id"])))
        if not activity:
            continue
        measured += 1
        idle_share = sum(a < IDLE_BELOW for a in activity) / len(activity)
        if idle_share > 0.10:
            idle_pairs.append((r, _gpu_j(r) * idle_share))
        mean = sum(activity) / len(activity)
        if mean < UNDERUSED_BELOW:
            under.append((r, mean))
    if not measured:
        why = "no GPU run" if not gpu_runs else "no GPU activity sampled in the GPU runs"
        return [
            Item("machine", "idle-gpus", idle_title, "unknown", why),
            Item("machine", "underused-gpus", under_title, "unknown", why),
        ]
    energy, usd, co2 = _stake(idle_pairs)
    idle = (
        Item("machine", "idle-gpus", idle_title, "failed",
             f"{len(idle_pairs)} of {measured} GPU run(s) idle more than 10 % of their samples: "
             f"{_ids([r for r, _ in idle_pairs])}; at stake: their GPU energy in idle samples",
             energy, usd, co2, "greenml diagnose RUN_ID: find the input-bound or waiting phases",
             _stake_rel(idle_pairs))
        if idle_pairs
        else Item("machine", "idle-gpus", idle_title, "passed",
                  f"{measured} GPU run(s) sampled, none idle more than 10 % of the time")
    )  # fmt: skip
    used = (
        Item("machine", "underused-gpus", under_title, "failed",
             f"{len(under)} of {measured} GPU run(s) under {UNDERUSED_BELOW:.0%} mean activity: "
             + ", ".join(f"{str(r['id'])[:8]} ({a:.0%})" for r, a in under[:4]),
             fix="a smaller GPU or larger batches: greenml advise hardware --workload RUN_ID")
        if under
        else Item("machine", "underused-gpus", under_title, "passed",
                  f"{measured} GPU run(s) at {UNDERUSED_BELOW:.0%} mean activity or more")
    )  # fmt: skip
    return [idle, used]


# --- mechanization ------------------------------------------------------------------------


def _environment(records: Sequence[dict[str, Any]]) -> Item:
    title = "Environment captured and reproducible (package hashes, clean git state)"
    if not records:
        return Item("mechanization", "environment", title, "unknown", "no runs")
    bad = []
    for r in records:
        env = r.get("environment") or {}
        hashed = bool((env.get("packages") or {}).get("sha256"))
        git = env.get("git") or {}
        if not hashed or not git.get("commit") or git.get("dirty"):
            bad.append(r)
    if not bad:
        return Item("mechanization", "environment", title, "passed",
                    f"all {len(records)} run(s): package hash, clean git commit")  # fmt: skip
    return Item(
        "mechanization", "environment", title, "failed",
        f"{len(bad)} of {len(records)} run(s) lack a package hash or a git commit, or ran "
        f"with uncommitted changes: {_ids(bad)}",
        fix="commit before measuring; run inside the project's git checkout",
    )  # fmt: skip


def _ci_gate(records: Sequence[dict[str, Any]], verdicts: Sequence[dict[str, Any]]) -> Item:
    title = "An energy gate in CI (greenml check verdicts stored)"
    if verdicts:
        failed = sum(1 for v in verdicts if v.get("outcome") == "fail")
        last = verdicts[-1]
        return Item("mechanization", "ci-gate", title, "passed",
                    f"{len(verdicts)} verdict(s) stored ({failed} failing); the last: "
                    f"{last.get('outcome')} at {last.get('checked_at', '?')}")  # fmt: skip
    return Item(
        "mechanization", "ci-gate", title, "failed" if records else "unknown",
        "no greenml check verdict stored in this store",
        fix="run greenml check --db URL --baseline … --candidate … in CI",
    )  # fmt: skip


def _monitoring(records: Sequence[dict[str, Any]]) -> Item:
    title = "Energy measured, not only modelled (hardware counters or power sampling)"
    if not records:
        return Item("mechanization", "monitoring", title, "unknown", "no runs")
    methods: dict[str, float] = {}
    for r in records:
        for comp in ((r.get("energy") or {}).get("components") or {}).values():
            if isinstance(comp, dict):
                key = str(comp.get("method") or "unknown")
                methods[key] = methods.get(key, 0.0) + float(comp.get("energy_j") or 0.0)
    total = sum(methods.values()) or 1.0
    shares = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(methods.items()))
    measured = methods.get("counter", 0.0) + methods.get("power-integrated", 0.0)
    if measured > 0:
        return Item("mechanization", "monitoring", title, "passed",
                    f"{len(records)} run(s) measured; energy by method: {shares}")  # fmt: skip
    return Item(
        "mechanization", "monitoring", title, "failed",
        f"{len(records)} run(s), all energy estimated from models ({shares}): no NVML or RAPL "
        "counter was readable",
        fix="give the runner access to NVML (GPU) and /sys/class/powercap (RAPL)",
    )  # fmt: skip


def _spot(records: Sequence[dict[str, Any]]) -> Item:
    title = f"Spot capacity with checkpointing for long jobs (over {LONG_JOB_S / 3600:g} h)"
    long = [r for r in records if float(r.get("duration_s") or 0.0) >= LONG_JOB_S]
    if not long:
        return Item("mechanization", "spot-checkpointing", title, "unknown",
                    f"no job longer than {LONG_JOB_S / 3600:g} h in scope")  # fmt: skip
    on_demand = []
    for r in long:
        instance = ((r.get("cost") or {}).get("instance") or {})
        tags = {k.lower(): str(v).lower() for k, v in (r.get("tags") or {}).items()}
        spot = instance.get("pricing") == "spot" or tags.get("spot") in ("1", "true", "yes")
        if not (spot and ("checkpoint" in tags or "checkpoints" in tags)):
            on_demand.append(r)
    if not on_demand:
        return Item("mechanization", "spot-checkpointing", title, "passed",
                    f"{len(long)} long job(s), all on spot with checkpoints")  # fmt: skip
    saving, priced = _spot_saving(on_demand)
    evidence = (
        f"{len(on_demand)} long job(s) not on spot with checkpoints (tags spot=true, "
        f"checkpoint=…): {_ids(on_demand)}"
    )
    if priced:
        evidence += (
            f"; at stake: the spot discount on {priced} of them (instance hours × "
            "(on-demand − spot list price), instance_prices.csv)"
        )
    return Item(
        "mechanization", "spot-checkpointing", title, "failed", evidence,
        usd=saving if priced else None,
        fix="greenml plan spot --work … --checkpoint-cost …; greenml.resilience checkpoints",
    )  # fmt: skip


def _spot_saving(records: Sequence[dict[str, Any]]) -> tuple[float, int]:
    """USD the spot list price would have saved, over the runs whose instance has one."""
    from greenml.accounting.instances import instance_price
    from greenml.errors import ConfigError

    saving, priced = 0.0, 0
    for r in records:
        block = (r.get("cost") or {}).get("instance") or {}
        hours, name = block.get("hours"), block.get("instance_type")
        if not isinstance(hours, (int, float)) or not name:
            continue
        try:
            price = instance_price(str(name), provider=block.get("provider"))
        except ConfigError:
            continue
        if price.spot_usd_per_h is None or price.on_demand_usd_per_h is None:
            continue
        saving += hours * (price.on_demand_usd_per_h - price.spot_usd_per_h)
        priced += 1
    return saving, priced


def _pue_stated(record: dict[str, Any]) -> bool:
    carbon = record.get("carbon") or {}
    stated = "not given" not in str(carbon.get("pue_source") or "not given")
    return stated and isinstance(carbon.get("pue"), (int, float))


def _pue(records: Sequence[dict[str, Any]]) -> Item:
    title = f"An efficient data centre (PUE at most {EFFICIENT_PUE:g})"
    known = [r for r in records if _pue_stated(r)]
    if not known:
        return Item("mechanization", "pue", title, "unknown",
                    "no run states its PUE (--pue VALUE or a provider)")  # fmt: skip
    high = [r for r in known if _pue_of(r) > EFFICIENT_PUE]
    if not high:
        return Item("mechanization", "pue", title, "passed",
                    f"{len(known)} run(s) at PUE ≤ {EFFICIENT_PUE:g}")  # fmt: skip
    pairs = [(r, float((r.get("energy") or {}).get("total_j") or 0.0)
              * (_pue_of(r) - EFFICIENT_PUE) / _pue_of(r)) for r in high]  # fmt: skip
    energy = sum(j * _pue_of(r) for r, j in pairs)
    return Item(
        "mechanization", "pue", title, "failed",
        f"{len(high)} run(s) in a facility above PUE {EFFICIENT_PUE:g}: "
        + ", ".join(f"{str(r['id'])[:8]} ({_pue_of(r):g})" for r in high[:4])
        + f"; at stake: the overhead above PUE {EFFICIENT_PUE:g}",
        energy, None, None, "run in a hyperscale cloud region (PUE 1.1-1.2)",
    )  # fmt: skip


# --- map ----------------------------------------------------------------------------------


def _location(records: Sequence[dict[str, Any]]) -> Item:
    title = "Location known: every run's carbon accounted"
    if not records:
        return Item("map", "location", title, "unknown", "no runs")
    missing = [r for r in records if _ci(r) is None]
    if not missing:
        return Item("map", "location", title, "passed", f"all {len(records)} run(s) have carbon")
    return Item("map", "location", title, "failed",
                f"{len(missing)} run(s) without a carbon intensity: {_ids(missing)}",
                fix="give --zone/--region/--country to greenml run, or GREENML_ZONE")  # fmt: skip


def _carbon_aware(records: Sequence[dict[str, Any]]) -> Item:
    title = "Carbon-aware scheduling used (greenml run --when green, plan job)"
    planned = [r for r in records if r.get("schedule")]
    if planned:
        return Item("map", "carbon-aware", title, "passed",
                    f"{len(planned)} of {len(records)} run(s) started by a green plan")  # fmt: skip
    if not records:
        return Item("map", "carbon-aware", title, "unknown", "no runs")
    return Item("map", "carbon-aware", title, "failed",
                f"none of {len(records)} run(s) was scheduled for greener hours",
                fix="greenml run --when green --deadline +8h -- …")  # fmt: skip


def _clean_grid(records: Sequence[dict[str, Any]]) -> Item:
    title = "Jobs placed on a low-carbon grid"
    with_ci = [(r, c) for r in records if (c := _ci(r)) is not None]
    if not with_ci:
        return Item("map", "clean-grid", title, "unknown", "no run has a carbon intensity")
    best, name = cleanest_region()
    energy = sum(float((r.get("carbon") or {}).get("facility_energy_kwh") or 0.0) * J_PER_KWH
                 for r, _ in with_ci)  # fmt: skip
    emitted = sum(float((r.get("carbon") or {}).get("facility_energy_kwh") or 0.0) * c
                  for r, c in with_ci)  # fmt: skip
    mean = emitted / (energy / J_PER_KWH) if energy > 0 else 0.0
    if mean <= 2 * best:
        return Item("map", "clean-grid", title, "passed",
                    f"mean {mean:.0f} g/kWh, within 2× the cleanest packaged cloud region "
                    f"({name}, {best:.0f} g/kWh)")  # fmt: skip
    co2 = emitted - energy / J_PER_KWH * best
    return Item(
        "map", "clean-grid", title, "failed",
        f"mean {mean:.0f} g/kWh over {len(with_ci)} run(s); the cleanest packaged cloud "
        f"region is {name} at {best:.0f} g/kWh; at stake: the CO2eq of the difference",
        None, None, co2,
        f"greenml diagnose RUN_ID --candidate-location {name}; greenml plan job --region …",
    )  # fmt: skip


def cleanest_region() -> tuple[float, str]:
    """The packaged cloud region with the lowest yearly intensity, as (g/kWh, name)."""
    from greenml.accounting.static import known_cloud_regions
    from greenml.diagnose.practice import candidate_intensity

    return min((candidate_intensity(name), name) for name in known_cloud_regions())
