"""The jobs of a project and one job's page: each node's run, added up, missing nodes flagged.

The figures are those of ``GET /api/v1/jobs[/{id}]`` (:mod:`greenml.server.api_jobs`),
so the page, the API and ``greenml jobs show`` never disagree.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from greenml.quantities import energy, mass, money, percent
from greenml.report.svg import esc
from greenml.server.api_jobs import MAX_JOBS, project_job, project_jobs
from greenml.server.dashboard.job_diagnosis import diagnosis_section
from greenml.server.dashboard.layout import link, page, table
from greenml.server.state import scope

router = APIRouter(include_in_schema=False)


@router.get("/jobs")
def jobs_view(request: Request, limit: int = Query(50, ge=1, le=MAX_JOBS)) -> Response:
    where = scope(request, "read")
    rows = [
        [link(_url(j["job_id"]), j["job_id"]), j["job_name"] or "", ", ".join(j["sources"]),
         (j["span"]["started_at"] or "")[:19].replace("T", " "), _nodes(j), _energy(j["energy"]),
         "; ".join(j["problems"])]
        for j in project_jobs(request, where, limit)
    ]  # fmt: skip
    body = (
        f"<h1>Jobs of {esc(where.project)}</h1>"
        '<p class="note">A job is the runs of its nodes (<code>greenml run --job ID</code>, '
        "Slurm, torchrun, Kubernetes, Ray), added up.</p>"
        + table(["job", "name", "source", "started (UTC)", "nodes", "energy", "problems"],
                rows, numeric=(5,))
        + ("" if rows else '<p class="muted">No jobs yet.</p>')
    )
    return page("Jobs", body, project=where.project, csrf=where.csrf)


@router.get("/jobs/{job_id:path}")
def job_view(request: Request, job_id: str) -> Response:
    where = scope(request, "read")
    job = project_job(request, where, job_id)
    span = job["span"]
    facts = {
        "source": ", ".join(job["sources"]), "nodes": _nodes(job),
        "energy": _energy(job["energy"]),
        "carbon": _block(job["carbon"], lambda v: mass(v * 1000.0)),
        "cost": _block(job["cost"], money),
        "started (UTC)": (span.get("started_at") or "-")[:19].replace("T", " "),
        "wall clock": "-" if span.get("wall_s") is None else f"{span['wall_s']:.1f} s",
    }
    rows = [
        ["-" if n["node_rank"] is None else n["node_rank"], n["node"] or "?",
         link(f"/runs/{n['run_id']}", n["run_id"]), n["status"],
         f"{energy(n['energy_j'])} {percent(n['uncertainty_rel'])}"
         + ("" if n["counted"] else " (not counted)"),
         ", ".join(f"{k} {energy(d['energy_j'])}" for k, d in n["devices"].items()),
         "unknown" if n["carbon_kg"] is None else mass(n["carbon_kg"] * 1000.0)
         + (f" ({n['carbon_location']})" if n["carbon_location"] else ""),
         "unknown" if n["cost_usd"] is None else money(n["cost_usd"])]
        for n in job["nodes"]
    ]  # fmt: skip
    problems = "".join(f'<li class="error">{esc(p)}</li>' for p in job["problems"])
    body = "".join([
        f"<h1>Job {esc(job['job_id'])}" + (f" ({esc(job['job_name'])})" if job["job_name"]
                                           else "") + "</h1>",
        '<dl class="kv">', *(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts.items()),
        "</dl>",
        f"<h2>Problems</h2><ul>{problems}</ul>" if problems else "",
        "<h2>Nodes</h2>",
        table(["rank", "node", "run", "status", "energy", "devices", "CO2eq", "cost"], rows,
              numeric=(4, 6, 7)),
        diagnosis_section(request, where, job_id),
        f"<p>{link('/api' + '/v1' + _url(job_id), 'This job as JSON')}</p>",
    ])  # fmt: skip
    return page(f"Job {job_id}", body, project=where.project, csrf=where.csrf)


def _url(job_id: str) -> str:
    return f"/jobs/{quote(job_id, safe='')}"


def _nodes(job: dict[str, Any]) -> str:
    expected = job["expected_nodes"]
    missing = f", {job['missing_count']} missing" if job.get("missing_count") else ""
    return f"{job['seen_nodes']} of {expected if expected is not None else '?'}{missing}"


def _energy(block: dict[str, Any]) -> str:
    return energy(block["total_j"], block.get("uncertainty_j"))


def _block(block: dict[str, Any], fmt: Any) -> str:
    value = block.get("kg", block.get("usd"))
    shown = "unknown" if value is None else str(fmt(value))
    if block.get("status") not in (None, "ok"):
        shown += f" ({block['status']}: no figure for {', '.join(block['nodes_without'])})"
    return shown
