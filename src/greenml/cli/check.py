"""``greenml check``: the CI energy gate — exit 1 when energy per unit of work rose too much.

Exit codes: 0 pass, 1 fail, 2 bad input (unknown run, unreadable JSON, units of
work that differ), 3 inconclusive (an increase above the allowance that is within
its uncertainty: the line says how many runs a side would decide it). The rule
is in :mod:`greenml.report.gate`, and so is which
energy is compared (``--compare``): by default the dynamic part when every run
records it, so that busy neighbours on a shared machine do not move the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.cli.options import db_option, json_option
from greenml.store.export import json_text

if TYPE_CHECKING:
    from greenml.report.explain import Explanation

_EPILOG = """\b
Each --baseline/--candidate is a stored run id (a unique prefix is enough) or a
run-record JSON file (greenml run --json-out FILE, greenml runs export ID -o FILE).
Repeat them to compare means over several runs.
\b
Examples:
  greenml check --baseline 5b1463e4 --candidate run.json --max-increase 5%
  greenml check -b main-1.json -b main-2.json -c pr-1.json -c pr-2.json
  greenml check -b 5b1463e4 -c 9f0c2a71 --explain   # and name what changed
\b
Exit status: 0 pass, 1 fail, 2 bad input, 3 inconclusive (the increase is
above the allowance only within its uncertainty; the line says how many runs
a side would decide it).
"""


@click.command(epilog=_EPILOG)
@click.option(
    "-b", "--baseline", "baselines", multiple=True, required=True, metavar="ID|FILE",
    help="A baseline run (repeatable).",
)  # fmt: skip
@click.option(
    "-c", "--candidate", "candidates", multiple=True, required=True, metavar="ID|FILE",
    help="A candidate run (repeatable).",
)  # fmt: skip
@click.option(
    "--max-increase",
    default="5%",
    show_default=True,
    metavar="PERCENT",
    help="Allowed increase of energy per unit of work: 5% or 5 (a bare number is percent).",
)
@click.option("--unit", metavar="UNIT", help="Unit of work when runs tag several (e.g. samples).")
@click.option(
    "--compare",
    type=click.Choice(["auto", "total", "dynamic"]),
    default="auto",
    show_default=True,
    help="Energy compared: the total, or the dynamic part (the total less the CPU's "
    "static idle-floor share); auto: dynamic when every run records it.",
)
@click.option(
    "--explain", is_flag=True,
    help="Also name what changed between the sides: packages, driver, CUDA, framework, "
    "git commit and dirty state, hardware, greenml's settings.",
)  # fmt: skip
@json_option("Print the verdict as JSON on stdout.")
@db_option
@click.pass_context
def check(
    ctx: click.Context,
    baselines: tuple[str, ...],
    candidates: tuple[str, ...],
    max_increase: str,
    unit: str | None,
    compare: str,
    explain: bool,
    as_json: bool,
    db_url: str | None,
) -> None:
    """Fail (exit 1) when energy per unit of work rose by more than allowed, beyond noise.

    Exit 0 pass, 1 fail, 3 inconclusive (within the noise: more runs a side needed).
    """
    from greenml.report.gate import check as run_check
    from greenml.report.gate import parse_threshold

    allowed = parse_threshold(max_increase)
    base, cand = _load([baselines, candidates], db_url)
    verdict = run_check(base, cand, allowed, unit=unit, compare=compare)
    why = _explain(base, cand) if explain else None
    if as_json:
        out = verdict.to_dict() | ({"explain": why.to_dict()} if why else {})
        click.echo(json_text(out, ensure_ascii=False))
    else:
        click.echo(verdict.line())
        for line in why.lines() if why else []:
            click.echo(line)
    _remember(verdict.to_dict(), db_url)
    if verdict.outcome != "pass":
        ctx.exit(EXIT_CODES[verdict.outcome])


def _explain(base: list[dict[str, Any]], cand: list[dict[str, Any]]) -> Explanation:
    """The environment diff of the two sides (``--explain``)."""
    from greenml.record.run_record import RunRecord
    from greenml.report.explain import explain

    return explain([RunRecord.from_dict(r) for r in base], [RunRecord.from_dict(r) for r in cand])


EXIT_CODES = {"pass": 0, "fail": 1, "inconclusive": 3}


VERDICTS_KEPT = 500


def _remember(verdict: dict[str, Any], db_url: str | None) -> None:
    """Keep the verdict in the run store (``greenml audit``'s evidence of a CI gate).

    Only when a store is named (``--db``, ``GREENML_DB``) or the default one exists; a
    store that cannot take it leaves the verdict and exit code as they are, and says so.
    """
    import os
    from datetime import datetime, timezone

    from greenml.errors import GreenmlError

    try:
        from greenml.store.url import resolve_url, sqlite_path

        path = sqlite_path(resolve_url(db_url))
        named = db_url is not None or bool(os.environ.get("GREENML_DB"))
        if not named and (path is None or not path.exists()):
            return
        from greenml.cli.runs import open_ingested

        with open_ingested(db_url) as store:
            state = store.get_state("gate", "verdicts") or {}
            kept = [v for v in state.get("verdicts") or [] if isinstance(v, dict)]
            entry = {**verdict, "checked_at": datetime.now(timezone.utc).isoformat()}
            store.put_state("gate", "verdicts", {"verdicts": [*kept, entry][-VERDICTS_KEPT:]})
    except GreenmlError as exc:
        click.echo(f"greenml: note: verdict not stored: {exc}", err=True)


def _load(sides: list[tuple[str, ...]], db_url: str | None) -> list[list[dict[str, Any]]]:
    """Run records for each side, from files or the store (opened once, only if needed)."""
    from greenml.errors import ConfigError

    store: Any = None
    out: list[list[dict[str, Any]]] = []
    try:
        for refs in sides:
            records: list[dict[str, Any]] = []
            for ref in refs:
                if _is_file(ref):
                    records.extend(_read_file(Path(ref)))
                    continue
                if store is None:
                    from greenml.cli.runs import open_ingested

                    store = open_ingested(db_url)
                records.append(store.get_record(ref))
            out.append(records)
    finally:
        if store is not None:
            store.close()
    shared = {r.get("id") for r in out[0]} & {r.get("id") for r in out[1]}
    if shared:
        raise ConfigError(f"run(s) {', '.join(sorted(map(str, shared)))} on both sides")
    return out


def _is_file(ref: str) -> bool:
    path = Path(ref)
    return path.suffix.lower() == ".json" or path.is_file() or "/" in ref or "\\" in ref


def _read_file(path: Path) -> list[dict[str, Any]]:
    """The run record(s) of a JSON file: one record, or a list of records."""
    from greenml.errors import ConfigError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from exc
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) and "id" in i and "energy" in i for i in items):
        raise ConfigError(
            f"{path} is not a greenml run record (greenml run --json-out, runs export)"
        )
    return items
