"""``verify``: did an applied change save what it promised? Before against after, by the gate.

For each applied item, the runs **after** are those whose ``policy`` block lists the item
(the runs greenml ran under it), or, for a change outside greenml, the runs tagged
``savings=ITEM``; the runs **before** are the plan's evidence runs of the same workload
that were not already at the new setting. Both sides go through the CI gate's comparison
(:func:`greenml.report.gate.check` for energy per unit of work; for a change that acts on
carbon, :mod:`greenml.report.compare` with the same rule on CO2eq per kWh, so that an
energy change made at the same time is not counted again): the mean, the larger of
stated and run-to-run uncertainty, the same-setup rule.

A verified saving's yearly figure is the plan's: its share of the footprint × the measured
saving ÷ the saving the plan expected; the report combines verified shares as the plan
combines expected ones (:mod:`greenml.savings.combine`).

How many runs: the gate's power calculation (:func:`greenml.report.gate.runs_to_decide`,
80 % power at one sigma) for the saving the plan expected, with the before side's spread.
Until that many runs exist the item is ``waiting``. Then it is ``verified`` (a saving
beyond its uncertainty: written to the ledger as a ``saving`` entry, its document kept in
the store) or ``not-saved`` (offered for undo).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.report.compare import Change, Estimate, change, group_estimate, run_figures
from greenml.report.compare import same_setup as same
from greenml.report.gate import check, runs_to_decide
from greenml.report.work import common_unit

if TYPE_CHECKING:
    from greenml.store.repository import Store


@dataclass(frozen=True)
class Outcome:
    """One applied item's verification."""

    item_id: str
    status: str  # waiting, verified, not-saved, no-baseline
    metric: str  # energy or carbon
    needed: int | None
    before: tuple[str, ...]
    after: tuple[str, ...]
    saving_rel: float | None = None
    uncertainty_rel: float | None = None
    unit: str | None = None
    per_unit_before: float | None = None
    per_unit_after: float | None = None
    ledger_seq: int | None = None

    def document(self, item: Mapping[str, Any], verified_at: str) -> dict[str, Any]:
        """What the ledger hashes and the store keeps of a verified saving."""
        expected = expected_rel(item)
        return {
            "base": item.get("base"),
            "share_verified": float(item.get("share") or 0.0) * (self.saving_rel or 0.0)
            / expected,
            "saving_id": f"{self.item_id}@{verified_at}",
            "item": self.item_id,
            "title": item.get("title"),
            "metric": self.metric,
            "unit": self.unit,
            "per_unit_before": self.per_unit_before,
            "per_unit_after": self.per_unit_after,
            "saving_rel": self.saving_rel,
            "uncertainty_rel": self.uncertainty_rel,
            "before_runs": list(self.before),
            "after_runs": list(self.after),
            "expected": {**{k: item.get(k) for k in
                            ("kwh_per_year", "co2_kg_per_year", "usd_per_year", "share")},
                         "saving_rel": expected},
            "method": ("greenml.report.gate: mean per unit of work, uncertainty the larger of "
                       "stated and run-to-run, significant beyond its combined uncertainty"),
            "verified_at": verified_at,
        }  # fmt: skip


def metric_of(item: Mapping[str, Any]) -> str:
    """``carbon`` (CO2eq per kWh) for a change that acts on carbon, else ``energy``."""
    return "carbon" if item.get("base") == "carbon" else "energy"


def per_kwh(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record with its energy as its work: carbon per unit of work is then g per kWh."""
    kwh = float((record.get("energy") or {}).get("total_j") or 0.0) / 3.6e6
    return {**record, "tags": {"work": repr(kwh), "work_unit": "kwh"}}


def runs_needed(before: Sequence[Mapping[str, Any]], expected_rel: float, metric: str) -> int:
    """The gate's power calculation for a saving of ``expected_rel`` (≥ 2 runs a side)."""
    if metric == "carbon":
        base = group_estimate([run_figures(per_kwh(r), "kwh") for r in before], "carbon")
    else:
        unit = common_unit({"baseline": before}, None)
        base = group_estimate([run_figures(r, unit) for r in before], "energy")
    if isinstance(base, str) or expected_rel <= 0:
        return 2
    mirrored = Change(1.0 - expected_rel, expected_rel, 0.0)
    return runs_to_decide(base, base, mirrored, 0.0, True) or 2


def _compare(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], metric: str
) -> tuple[Estimate, Estimate, Change, str | None]:
    if metric == "energy":
        verdict = check(before, after, 0.0)
        return verdict.baseline, verdict.candidate, verdict.change, verdict.unit
    b = group_estimate([run_figures(per_kwh(r), "kwh") for r in before], "carbon")
    a = group_estimate([run_figures(per_kwh(r), "kwh") for r in after], "carbon")
    unit = "kwh"
    if isinstance(b, str) or isinstance(a, str):
        raise ConfigError(b if isinstance(b, str) else str(a))
    return b, a, change(b, a, same([*before, *after])), unit


def verify_item(
    item_id: str, applied: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
) -> Outcome:
    """Compare the runs before and after one applied item."""
    item = applied["item"]
    metric = metric_of(item)
    by_id = {str(r["id"]): r for r in records}
    before = [by_id[r] for r in applied.get("baseline_runs") or [] if r in by_id]
    after = [r for r in records if r.get("status") == "completed" and (
        item_id in ((r.get("policy") or {}).get("items") or [])
        or (r.get("tags") or {}).get("savings") == item_id)]  # fmt: skip
    before = same_workload(before, after)
    ids_b, ids_a = tuple(str(r["id"]) for r in before), tuple(str(r["id"]) for r in after)
    if not before:
        return Outcome(item_id, "no-baseline", metric, None, ids_b, ids_a)
    expected = expected_rel(item)
    needed = runs_needed(before, expected, metric)
    if len(after) < needed:
        return Outcome(item_id, "waiting", metric, needed, ids_b, ids_a)
    b, a, moved, unit = _compare(before, after, metric)
    saved = moved.change_rel < 0 and moved.significant
    return Outcome(
        item_id, "verified" if saved else "not-saved", metric, needed, ids_b, ids_a,
        -moved.change_rel, moved.uncertainty_rel, unit, b.value, a.value,
    )  # fmt: skip


def same_workload(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The runs before of the workloads run after (before any: the largest workload's)."""
    from collections import Counter

    from greenml.savings.power import workload_of

    names = {workload_of(r) for r in after}
    if not names:
        counts = Counter(workload_of(r) for r in before)
        names = {counts.most_common(1)[0][0]} if counts else set()
    return [r for r in before if workload_of(r) in names]


def expected_rel(item: Mapping[str, Any]) -> float:
    """The relative saving per run the plan expected (its advisor's figure, else its share)."""
    stated = (item.get("settings") or {}).get("expected_saving_rel")
    if isinstance(stated, (int, float)) and stated > 0:
        return float(stated)
    return max(float(item.get("share") or 0.0), 0.01)


def verify_all(store: Store, ledger: bool = True) -> list[Outcome]:
    """Verify every applied item; a newly verified saving goes to the store and the ledger."""
    from greenml.savings import state

    applied = state.applied(store)
    rows = store.list_runs(limit=0)
    records = [store.get_record(r["id"]) for r in rows]
    outcomes, kept = [], state.verified(store)
    for item_id, entry in sorted(applied.items()):
        outcome = verify_item(item_id, entry, records)
        if outcome.status == "verified" and not _already(kept, item_id, outcome):
            now = datetime.now(timezone.utc).isoformat(timespec="seconds")
            document = outcome.document(entry["item"], now)
            kept[document["saving_id"]] = document
            state.put_verified(store, kept)
            seq = _ledger(store, document) if ledger else None
            outcome = replace(outcome, ledger_seq=seq)
        outcomes.append(outcome)
        entry["last_verify"] = {"status": outcome.status, "saving_rel": outcome.saving_rel,
                                "uncertainty_rel": outcome.uncertainty_rel,
                                "before": len(outcome.before), "after": len(outcome.after)}
    state.put_applied(store, applied)
    return outcomes


def _already(kept: Mapping[str, Any], item_id: str, outcome: Outcome) -> bool:
    """A saving of this item on exactly these runs is already verified."""
    return any(d.get("item") == item_id and tuple(d.get("after_runs") or []) == outcome.after
               for d in kept.values())  # fmt: skip


def _ledger(store: Store, document: Mapping[str, Any]) -> int | None:
    from greenml.ledger.canonical import record_sha256
    from greenml.ledger.file import append_hash
    from greenml.ledger.paths import ledger_path

    path = ledger_path(store.url)
    if path is None:
        return None
    entry = append_hash(path, str(document["saving_id"]), record_sha256(document), kind="saving")
    return entry.seq
