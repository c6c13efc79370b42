"""The diagnosis section of a job's page: critical path, waiting energy, scaling, outliers.

The figures are those of ``GET /api/v1/diagnosis/jobs/{id}``
(:mod:`greenml.server.api_job_diagnosis`), so the page and ``greenml diagnose --job``
never disagree.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request

from greenml.quantities import energy, percent
from greenml.report.svg import esc
from greenml.server.api_job_diagnosis import project_job_diagnosis
from greenml.server.auth import Scope
from greenml.server.dashboard.layout import table


def diagnosis_section(request: Request, where: Scope, job_id: str) -> str:
    """The ``<h2>Diagnosis</h2>`` section of a job's page (HTML, every value escaped)."""
    from greenml.errors import GreenmlError

    try:
        found = project_job_diagnosis(request, where, job_id)
    except GreenmlError as exc:  # the job's figures above still stand
        return f'<h2>Diagnosis</h2><p class="error">diagnosis unavailable: {esc(str(exc))}</p>'
    parts = ["<h2>Diagnosis</h2>", "<dl class=\"kv\">"]
    parts += _stragglers(found.get("stragglers"))
    scaling = found.get("scaling")
    parts.append(f"<dt>scaling against earlier jobs</dt><dd>{esc(scaling['text'])}</dd>"
                 if scaling else "")  # fmt: skip
    outliers = found.get("outliers") or []
    parts.append("<dt>nodes out of line</dt><dd>"
                 + ("; ".join(esc(o["text"]) for o in outliers) or "none") + "</dd>")  # fmt: skip
    parts.append("</dl>")
    straggling = found.get("stragglers")
    if straggling:
        parts.append(_rank_table(straggling))
    if scaling:
        parts.append(_scaling_table(scaling))
    notes = "".join(f"<li>{esc(n)}</li>" for n in found.get("notes") or [])
    parts.append(f'<ul class="note">{notes}</ul>' if notes else "")
    return "".join(parts)


def _stragglers(found: dict[str, Any] | None) -> list[str]:
    if not found:
        return ["<dt>critical path</dt><dd>no cross-node analysis (see the notes)</dd>"]
    rank = found["critical_rank"]
    node = found.get("critical_node")
    where = f" on node {node}" if node else ""
    return [
        f"<dt>critical path</dt><dd>rank {esc(rank)}{esc(where)}, "
        f"{esc(percent(found['critical_share']))} of {esc(found['steps'])} steps</dd>",
        f"<dt>waiting energy</dt><dd>{esc(energy(found['wait_energy_j']))} "
        f"({esc(percent(found['wait_fraction']))} of the step energy)</dd>",
        f"<dt>finding</dt><dd>{esc(found['text'])}</dd>",
    ]


def _rank_table(found: dict[str, Any]) -> str:
    rows = [[r["rank"], r.get("node") or "?", f"{r['mean_step_s']:.3g} s",
             f"{r['mean_slack_s']:.3g} s", energy(r["wait_energy_j"])]
            for r in found["ranks"]]  # fmt: skip
    return table(["rank", "node", "mean step", "mean wait", "waiting energy"], rows,
                 numeric=(2, 3, 4))  # fmt: skip


def _scaling_table(found: dict[str, Any]) -> str:
    def num(value: float | None, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    rows = [[r["nodes"], r["jobs"], num(r["speedup"], ".2f"), num(r["efficiency"], ".0%"),
             "-" if r["energy_per_work_j"] is None else energy(r["energy_per_work_j"])]
            for r in found["rows"]]  # fmt: skip
    return table(["nodes", "jobs", "speedup", "efficiency", "energy per unit of work"], rows,
                 numeric=(2, 3, 4))  # fmt: skip
