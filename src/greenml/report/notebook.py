"""Notebook views: a run and a report as HTML (``_repr_html_``).

A report is the page ``greenml report --format html`` writes, framed in an
``iframe`` so that its style stays inside it. A finished run shows its figures
(energy per device, carbon, cost) and its impact statement with the charts; a
running one shows what it has measured so far.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING, Any

import greenml.quantities as q
from greenml.measure.html import measurement_html

if TYPE_CHECKING:
    from greenml.report.model import Report

def report_html(report: Report) -> str:
    """The whole HTML report, in a sandboxed frame (``Report._repr_html_``)."""
    return report._repr_html_()


def run_html(run: Any) -> str:
    """A ``greenml.Run``: a live table while it runs; its figures and statement once stored."""
    record = run.record.to_dict() if getattr(run, "record", None) is not None else None
    title = escape(f"greenml run {run.name or ''} ({run.run_id or 'not stored'})")
    if record is None:
        meter = run.meter
        if meter is None:
            notes = "".join(f"<li>{escape(n)}</li>" for n in run.notes)
            return f"<p><b>{title}</b>: nothing measured</p><ul>{notes}</ul>"
        return f"<p><b>{title}</b>: running</p>" + measurement_html(meter.peek_window("run"))
    return record_html(record)


def record_html(record: dict[str, Any]) -> str:
    """A stored run record: key figures, then the impact statement with its charts."""
    from greenml.report.runset import RunSet
    from greenml.report.statement import build

    energy = record.get("energy") or {}
    carbon = record.get("carbon") or {}
    cost = record.get("cost") or {}
    rows = [
        ("run", f"{record.get('name') or ''} {record.get('id')}"),
        ("status", str(record.get("status"))),
        ("energy", f"{q.energy((energy.get('total_kwh') or 0) * q.J_PER_KWH)} "
                   f"({q.pm(energy.get('uncertainty_rel') or 0)})"),
        ("CO2eq", _known(carbon.get("kg"), lambda kg: q.co2(kg * 1000), carbon)),
        ("cost", _known(cost.get("usd"), q.money, cost)),
    ]  # fmt: skip
    table = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{escape(v)}</td></tr>"
                    for k, v in rows)  # fmt: skip
    try:
        statement = report_html(build(RunSet([record])))
    except Exception as exc:  # a notebook view never fails: the figures above stay
        statement = f"<p>no statement: {escape(repr(exc))}</p>"
    return f"<table>{table}</table>{statement}"


def _known(value: Any, shown: Callable[[float], str], block: dict[str, Any]) -> str:
    if isinstance(value, int | float):
        return shown(float(value))
    return f"{block.get('status', 'unknown')}: {block.get('hint') or block.get('reason') or ''}"
