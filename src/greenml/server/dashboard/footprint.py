"""The run page's footprint beyond location-based carbon: market-based and embodied CO2eq,
water and work done, each beside the location-based figure with its method and source.

Market-based carbon is never mixed into the location-based figure (GHG Protocol Scope 2
dual reporting); offsets are listed, never subtracted.
"""

from __future__ import annotations

from typing import Any

from greenml.quantities import litres as litres_text
from greenml.quantities import mass, percent
from greenml.server.dashboard.layout import table


def footprint_html(record: dict[str, Any]) -> str:
    """A table of the record's footprint blocks; a block that is absent or unknown says why."""
    rows = [
        _carbon_row("CO2eq, location-based", record.get("carbon"), "source"),
        _carbon_row("CO2eq, market-based", record.get("carbon_market"), "basis"),
        _carbon_row("CO2eq, embodied (amortized)", record.get("embodied"), "formula"),
        _water_row(record.get("water")),
        _flops_row(record.get("flops")),
    ]
    market = record.get("carbon_market") or {}
    offsets = ""
    if market.get("offsets_kg"):
        grams = float(market["offsets_kg"]) * 1000
        offsets = (f'<p class="note">Offsets held: {mass(grams)} CO2eq — listed, never '
                   "subtracted from either figure.</p>")
    return table(["figure", "value", "method", "uncertainty", "basis or source"], rows,
                 numeric=(1, 3)) + offsets  # fmt: skip


def _carbon_row(label: str, block: Any, basis_key: str) -> list[object]:
    if not isinstance(block, dict) or block.get("kg") is None:
        return [label, "unknown", "", "", _why(block, ABSENT[label])]
    grams = float(block["kg"]) * 1000
    rel = float(block.get("uncertainty_rel") or 0.0)
    return [label, mass(grams), block.get("method") or "", "±" + percent(rel),
            block.get(basis_key) or block.get("source") or ""]  # fmt: skip


def _water_row(block: Any) -> list[object]:
    if not isinstance(block, dict) or block.get("litres") is None:
        return ["water consumed", "unknown", "", "", _why(block, ABSENT["water consumed"])]
    litres = float(block["litres"])
    rel = float(block.get("uncertainty_rel") or 0.0)
    onsite, offsite = _litres(block.get("onsite_l"), rel), _litres(block.get("offsite_l"), rel)
    parts = f"on-site {onsite} (WUE {block.get('wue_l_per_kwh')} L/kWh: "
    parts += f"{block.get('wue_source') or '?'}); off-site {offsite}"
    if block.get("offsite_source"):
        parts += f" ({block['offsite_source']})"
    elif block.get("offsite_reason"):
        parts += f" ({block['offsite_reason']})"
    return ["water consumed", _litres(litres, rel), block.get("method") or "", "±" + percent(rel),
            parts]  # fmt: skip


def _flops_row(block: Any) -> list[object]:
    if not isinstance(block, dict) or block.get("flops") is None:
        return ["work done (FLOPs)", "not counted", "", "",
                _why(block, ABSENT["work done (FLOPs)"])]  # fmt: skip
    rel = float(block.get("uncertainty_rel") or 0.0)
    detail = []
    if block.get("mfu") is not None:
        detail.append(f"MFU {percent(float(block['mfu']))} of {block.get('peak_source') or '?'}")
    if block.get("flops_per_j") is not None:
        detail.append(f"{float(block['flops_per_j']):.3g} FLOP/J")
    if block.get("source"):
        detail.append(str(block["source"]))
    return ["work done (FLOPs)", f"{float(block['flops']):.3g}", block.get("method") or "",
            "±" + percent(rel), "; ".join(detail)]  # fmt: skip


def _litres(value: Any, rel: float | None = None) -> str:
    if value is None:
        return "unknown"
    return litres_text(float(value), rel or None)


ABSENT = {
    "CO2eq, location-based": "no carbon in this record: the run had no location "
    "(--zone, --region, --country, --intensity-trace)",
    "CO2eq, market-based": "no market-based declaration for this run "
    "(--supplier-ci, --certificates, --market)",
    "CO2eq, embodied (amortized)": "no embodied figure in this record "
    "(its devices are not in the embodied table, or it predates it)",
    "water consumed": "no water figure in this record",
    "work done (FLOPs)": "this run counted no FLOPs: count them with FlopSampler, "
    "the callbacks' flops=, or tag flops=N",
}
"""Why a row is empty when its block is absent, one reason per row."""


def _why(block: Any, absent: str) -> str:
    if not isinstance(block, dict):
        return absent
    missing = block.get("missing")
    text = block.get("reason") or block.get("hint") or block.get("status") or ""
    if isinstance(missing, list) and missing:
        text = "; ".join(str(m) for m in missing)
    return str(text) or absent
