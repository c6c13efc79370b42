"""A stored run record as HTML, for notebooks (``RunRecord._repr_html_``).

The key figures and the energy per device, each with its method and uncertainty;
the impact statement with its charts is the view of a ``greenml.Run``
(:mod:`greenml.report.notebook`), which the record does not import.
"""

from __future__ import annotations

from html import escape
from typing import Any

from greenml.quantities.energy import joules_text


def record_table_html(record: dict[str, Any]) -> str:
    """Run, status, energy, CO2eq, cost; then one row per device."""
    energy = record.get("energy") or {}
    carbon = record.get("carbon") or {}
    cost = record.get("cost") or {}
    heads = [
        ("run", f"{record.get('name') or ''} {record.get('id', '')}"),
        ("status", str(record.get("status"))),
        ("energy", f"{joules_text(float(energy.get('total_j') or 0))} "
                   f"(±{float(energy.get('uncertainty_rel') or 0) * 100:.0f} %)"),
        ("CO2eq", _figure(carbon, "kg", "kg")),
        ("cost", _figure(cost, "usd", "USD")),
    ]  # fmt: skip
    rows = "".join(f"<tr><th style='text-align:left'>{k}</th><td colspan='3'>{escape(v)}</td></tr>"
                   for k, v in heads)  # fmt: skip
    for comp, block in (energy.get("components") or {}).items():
        for key, dev in ((block or {}).get("devices") or {}).items():
            rows += (
                f"<tr><td>{escape(comp)}</td><td>{escape(key)} {escape(str(dev.get('name', '')))}"
                f"</td><td>{joules_text(float(dev.get('energy_j') or 0))}</td>"
                f"<td>{escape(str(dev.get('method', '')))} "
                f"±{float(dev.get('uncertainty_rel') or 0) * 100:.0f} %</td></tr>"
            )
    return f"<table>{rows}</table>"


def _figure(block: dict[str, Any], key: str, unit: str) -> str:
    value = block.get(key)
    if isinstance(value, int | float):
        return f"{value:.4g} {unit}"
    return f"{block.get('status', 'unknown')}: {block.get('hint') or block.get('reason') or ''}"
