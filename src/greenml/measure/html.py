"""A measurement as an HTML table, for notebooks (``Measurement._repr_html_``)."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from greenml.quantities.energy import joules_text

if TYPE_CHECKING:
    from greenml.measure.measurement import Measurement


def measurement_html(m: Measurement) -> str:
    """One row per device (energy, method, uncertainty), then the total and mean power."""
    rows = []
    for comp, block in m.components.items():
        for key, d in block.devices.items():
            rows.append(
                f"<tr><td>{escape(comp)}</td><td>{escape(key)} {escape(d.name)}</td>"
                f"<td style='text-align:right'>{joules_text(d.energy_j)}</td>"
                f"<td>{escape(d.method)}</td><td style='text-align:right'>"
                f"±{d.uncertainty_rel * 100:.0f} %</td></tr>"
            )
    total = (
        f"<tr style='font-weight:bold'><td>total</td><td></td><td style='text-align:right'>"
        f"{joules_text(m.total_j)}</td><td></td><td style='text-align:right'>"
        f"±{m.uncertainty_rel * 100:.0f} %</td></tr>"
    )
    head = "".join(f"<th>{h}</th>" for h in ("component", "device", "energy", "method", "±"))
    caption = (
        f"<caption style='text-align:left'><b>{escape(m.name)}</b> · {m.duration_s:.3g} s · "
        f"{m.average_power_w:.3g} W mean</caption>"
    )
    body = "".join(rows) + total
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
