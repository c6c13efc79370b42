"""The compression result for a terminal: one table, the recommendation, and the fine print.

Lazy imports: rich (~30 ms) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from typing import Any

import greenml.quantities as q
from greenml.compress.result import ITEM_NOTE, CompressionResult
from greenml.compress.variants import Variant
from greenml.quantities import sig

RECOMMENDED, FRONT = "★", "•"


def joules(value: float) -> str:
    """Joules with three significant figures in the unit that fits (:mod:`greenml.quantities`)."""
    return q.energy(value, digits=3)


def seconds(value: float) -> str:
    """A latency: µs, ms or s (minutes beyond), three significant figures."""
    return q.duration(value, 3)


def size(nbytes: int) -> str:
    """Bytes in decimal units (kB, MB, GB)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def pct(rel: float) -> str:
    """A relative uncertainty: ``±12 %``."""
    return q.pm(rel)


def table(result: CompressionResult) -> Any:
    """A rich Table, one row per variant."""
    from rich.table import Table

    t = Table(show_edge=False, pad_edge=False)
    t.add_column("variant", no_wrap=True)
    t.add_column("accuracy", justify="right", no_wrap=True)
    t.add_column("Δ pp", justify="right", no_wrap=True)
    t.add_column("energy/1k inf.", justify="right", no_wrap=True)
    t.add_column("vs base", justify="right", no_wrap=True)
    t.add_column("method", no_wrap=True)
    t.add_column("latency p50/p99", justify="right", no_wrap=True)
    t.add_column("items/s", justify="right", no_wrap=True)
    t.add_column("size", justify="right", no_wrap=True)
    t.add_column("params", justify="right", no_wrap=True)
    base = result.variants[0].energy_per_1k_j if result.variants else None
    for v in result.variants:
        t.add_row(*_row(v, result.recommendation.variant, base))
    return t


def _row(v: Variant, recommended: str | None, base_j: float | None) -> list[str]:
    mark = RECOMMENDED if v.name == recommended else FRONT if v.pareto else " "
    name = f"{mark} {v.name}"
    size_text = size(v.size_bytes) if v.size_bytes is not None else "-"
    params = f"{v.params:,}" if v.params is not None else "-"
    if not v.ok:
        return [name, v.status, "-", "-", "-", "-", "-", "-", size_text, params]
    accuracy = f"{v.accuracy_pct:.2f} %" if v.accuracy_pct is not None else "-"
    drop = f"{0.0 - v.accuracy_drop_pp + 0.0:+.2f}" if v.accuracy_drop_pp is not None else "-"
    energy, ratio, method = "-", "-", "-"
    if v.energy_per_1k_j is not None:
        energy = joules(v.energy_per_1k_j)
        if v.energy_spread_rel is not None:
            energy += f" {pct(v.energy_spread_rel)}"
        if base_j:
            ratio = f"{v.energy_per_1k_j / base_j:.2f}×"
        method = f"{v.energy_method} {pct(v.energy_uncertainty_rel or 0.0)}"
    latency = "-"
    if v.latency_p50_s is not None and v.latency_p99_s is not None:
        latency = f"{seconds(v.latency_p50_s)} / {seconds(v.latency_p99_s)}"
    throughput = f"{v.throughput_items_per_s:,.0f}" if v.throughput_items_per_s else "-"
    return [name, accuracy, drop, energy, ratio, method, latency, throughput, size_text, params]


def lines(result: CompressionResult) -> list[str]:
    """What goes under the table: the recommendation, skips and failures, notes, how measured."""
    out = [f"recommendation: {result.recommendation.reason}"]
    out.append(
        f"{RECOMMENDED} recommended · {FRONT} on the accuracy-vs-energy Pareto front · Δ pp: "
        f"accuracy change vs the baseline, budget −{result.max_accuracy_drop_pp:g} pp"
    )
    out.append(
        f"energy: per 1,000 inferences; {ITEM_NOTE} ({result.batch_size} items); ± after the "
        f"energy is the round-to-round standard error over {result.rounds} round(s); the method "
        "column gives how the Meter obtained it and its own uncertainty (shared by all variants)"
        + (f"; {result.threads} intra-op thread(s)" if result.threads else "")
    )
    for v in result.variants:
        if v.status == "skipped":
            out.append(f"skipped {v.name}: {v.reason}")
        elif v.status == "failed":
            out.append(f"failed {v.name}: {v.reason}")
    for v in result.variants:
        for note in v.notes:
            out.append(f"note {v.name}: {note}")
        if v.build_energy_j is not None and v.build_duration_s and v.build_duration_s >= 0.5:
            out.append(
                f"note {v.name}: building it took {v.build_duration_s:.1f} s and "
                f"{joules(v.build_energy_j)} ({v.energy_method or 'measured'}), once"
                + _payback(v, result)
            )
    out.extend(f"meter: {note}" for note in result.meter_notes)
    return out


def _payback(v: Variant, result: CompressionResult) -> str:
    """``; repaid after ~N inferences`` when the variant saves energy per inference."""
    base = result.variants[0].energy_per_1k_j if result.variants else None
    if v.build_energy_j is None or v.energy_per_1k_j is None or not base:
        return ""
    saved_per_inference_j = (base - v.energy_per_1k_j) / 1000.0
    if saved_per_inference_j <= 0:
        return "; it saves no energy per inference here, so this is never repaid"
    return f"; repaid after ~{sig(v.build_energy_j / saved_per_inference_j, 2)} inferences"
