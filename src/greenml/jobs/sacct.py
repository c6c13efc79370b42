"""Slurm's own energy accounting (``sacct`` ``ConsumedEnergyRaw``) as a second, labelled source.

Where a cluster runs an ``acct_gather_energy`` plugin (RAPL, IPMI, the GPU
plugin ...), ``sacct`` reports each job step's energy in joules. That figure
covers what the plugin measures on the whole node, which is not exactly what
greenml measured (greenml's GPUs and the command's CPU share), so it is shown
next to greenml's figure with the difference, never merged into it.

Rows are read by raw job id (``JobIDRaw``), so that an array task (``6_0``,
whose own id is, say, 7) is compared with its own rows; a job (or task) whose
runs measured whole allocations (the prolog) is compared with sacct's job line,
or with the sum of its steps where the job line carries no energy. sacct's
``State`` says whether the job was cancelled.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.jobs.summary import JobSummary

SOURCE = "slurm sacct ConsumedEnergyRaw"
FIELDS = "JobIDRaw,NodeList,ConsumedEnergyRaw,Elapsed,State"


def read_sacct(job_id: str, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    """``sacct``'s rows of the job: ``job_step``, ``nodes``, ``energy_j`` (None: not reported).

    Raises:
        ConfigError: ``sacct`` is not on PATH, fails, or answers in a form not understood.
    """
    exe = shutil.which("sacct")
    if exe is None:
        raise ConfigError("sacct is not on PATH (Slurm's accounting is not reachable here)")
    try:
        done = subprocess.run(
            [exe, "-j", job_id, "--noheader", "--parsable2", f"--format={FIELDS}"],
            capture_output=True, text=True, timeout=timeout_s, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"sacct -j {job_id} failed: {exc}") from None
    if done.returncode != 0:
        message = " ".join(done.stderr.split())[:200] or f"exit {done.returncode}"
        raise ConfigError(f"sacct -j {job_id} failed: {message}")
    return parse_sacct(done.stdout)


def parse_sacct(text: str) -> list[dict[str, Any]]:
    """Rows of ``sacct --parsable2 --noheader --format=JobID,NodeList,ConsumedEnergyRaw,...``.

    Raises:
        ConfigError: A line has too few fields, or an energy that is not a number.
    """
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) < 3:
            raise ConfigError(f"sacct printed a line not understood: {line[:120]!r}")
        raw = parts[2].strip()
        try:
            energy = float(raw) if raw else None
        except ValueError:
            raise ConfigError(f"sacct ConsumedEnergyRaw {raw!r} is not a number") from None
        if energy is not None and (energy < 0 or energy != energy or energy >= 2**63):
            energy = None  # Slurm prints a sentinel for "not measured" on some versions
        state = parts[4].strip() if len(parts) > 4 else None
        rows.append({"job_step": parts[0].strip(), "nodes": parts[1].strip(), "energy_j": energy,
                     "state": state})  # fmt: skip
    return rows


def sacct_energy(rows: Sequence[dict[str, Any]], job_id: str, steps: Sequence[str]) -> float | None:
    """The energy of the steps greenml measured (none: the whole allocation), or None.

    The whole allocation is sacct's job line, or the sum of its steps' lines where
    the job line carries none. Slurm prints 0 (or nothing) where no energy plugin
    measured: that is "not reported".
    """
    if steps:
        wanted = {f"{job_id}.{s}" for s in steps}
        values = [r["energy_j"] for r in rows if r["job_step"] in wanted]
    else:
        values = [r["energy_j"] for r in rows if r["job_step"] == job_id]
        if not any(values):
            values = [r["energy_j"] for r in rows if r["job_step"].startswith(f"{job_id}.")]
    known = [v for v in values if v]
    return sum(known) if known else None


def cancelled(rows: Sequence[dict[str, Any]], job_ids: Sequence[str]) -> list[str]:
    """The raw job ids among ``job_ids`` whose job line sacct reports as cancelled."""
    return [r["job_step"] for r in rows
            if r["job_step"] in job_ids and (r.get("state") or "").startswith("CANCELLED")]


def compare_sacct(summary: JobSummary, *, required: bool = False) -> dict[str, Any]:
    """sacct's figure for the job next to greenml's, labelled; unavailable says why.

    Raises:
        ConfigError: ``required`` (``--sacct``) and sacct could not be read.
    """
    greenml_j = summary.energy["total_j"]
    try:
        rows = read_sacct(summary.job_id)
    except ConfigError as exc:
        if required:
            raise
        return {"source": SOURCE, "status": "unavailable", "energy_j": None,
                "greenml_energy_j": greenml_j, "text": f"unavailable: {exc}"}  # fmt: skip
    parts: list[dict[str, Any]] = []
    for raw in sorted({n.job_id or summary.job_id for n in summary.nodes}):
        mine = [n for n in summary.nodes if (n.job_id or summary.job_id) == raw and n.counted]
        whole = any(n.step_id is None or n.scope == "allocation" for n in mine)
        steps = [] if whole else sorted({n.step_id for n in mine if n.step_id is not None})
        parts.append({"job_id": raw, "steps": steps, "energy_j": sacct_energy(rows, raw, steps),
                      "greenml_energy_j": sum(n.energy_j for n in mine)})  # fmt: skip
    out: dict[str, Any] = {
        "source": SOURCE, "rows": rows, "parts": parts, "greenml_energy_j": greenml_j,
        "cancelled": cancelled(rows, [p["job_id"] for p in parts]),
    }  # fmt: skip
    known = [p for p in parts if p["energy_j"] is not None]
    if not known:
        return {**out, "status": "unavailable", "energy_j": None,
                "text": "unavailable: sacct reports no energy for the job (is an "
                        "acct_gather_energy plugin configured?)"}  # fmt: skip
    energy = sum(p["energy_j"] for p in known)
    compared_j = sum(p["greenml_energy_j"] for p in known)
    diff = (compared_j - energy) / energy if energy > 0 else None
    scope = "; ".join(_scope(p) for p in known)
    text = f"{energy / 1000:.4g} kJ for {scope}"
    if len(known) < len(parts):
        text += f" (no sacct energy for {', '.join(p['job_id'] for p in parts if p not in known)})"
    if diff is not None:
        text += f"; greenml's figure is {diff:+.1%} of it (sacct counts what its plugin measures)"
    return {**out, "status": "ok", "energy_j": energy, "difference_rel": diff, "scope": scope,
            "text": text}  # fmt: skip


def _scope(part: dict[str, Any]) -> str:
    if part["steps"]:
        return f"steps {', '.join(part['steps'])}"
    return f"job {part['job_id']}'s whole allocation"
