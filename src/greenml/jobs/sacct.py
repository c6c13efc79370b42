"""Slurm's own energy accounting (``sacct`` ``ConsumedEnergyRaw``) as a second, labelled source.

Where a cluster runs an ``acct_gather_energy`` plugin (RAPL, IPMI, the GPU
plugin ...), ``sacct`` reports each job step's energy in joules. That figure
covers what the plugin measures on the whole node, which is not exactly what
greenml measured (greenml's GPUs and the command's CPU share), so it is shown
next to greenml's figure with the difference, never merged into it.
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
FIELDS = "JobID,NodeList,ConsumedEnergyRaw,Elapsed"


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
        rows.append({"job_step": parts[0].strip(), "nodes": parts[1].strip(), "energy_j": energy})
    return rows


def sacct_energy(rows: Sequence[dict[str, Any]], job_id: str, steps: Sequence[str]) -> float | None:
    """The energy of the steps greenml measured (all of them: the job's own line), or None.

    Slurm prints 0 (or nothing) where no energy plugin measured: that is "not reported".
    """
    if steps:
        wanted = {f"{job_id}.{s}" for s in steps}
        values = [r["energy_j"] for r in rows if r["job_step"] in wanted]
    else:
        values = [r["energy_j"] for r in rows if r["job_step"] == job_id]
    known = [v for v in values if v]
    return sum(known) if known else None


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
    steps = sorted({n.step_id for n in summary.nodes if n.step_id is not None})
    energy = sacct_energy(rows, summary.job_id, steps)
    if energy is None:
        return {"source": SOURCE, "status": "unavailable", "energy_j": None,
                "greenml_energy_j": greenml_j, "rows": rows,
                "text": "unavailable: sacct reports no energy for the job (is an "
                        "acct_gather_energy plugin configured?)"}  # fmt: skip
    diff = (greenml_j - energy) / energy if energy > 0 else None
    scope = f"steps {', '.join(steps)}" if steps else "the whole allocation"
    text = f"{energy / 1000:.4g} kJ for {scope}"
    if diff is not None:
        text += f"; greenml's figure is {diff:+.1%} of it (sacct counts what its plugin measures)"
    return {"source": SOURCE, "status": "ok", "energy_j": energy, "greenml_energy_j": greenml_j,
            "difference_rel": diff, "scope": scope, "rows": rows, "text": text}  # fmt: skip
