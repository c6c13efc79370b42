"""``greenml bisect``: drive ``git bisect`` with the energy gate as the test.

Exit codes: 0 the first bad commit is named, 1 no regression between the good
and the bad commit (the gate passes), 2 bad input, 3 undecided (inconclusive
steps were skipped and several commits are left, or the bad commit is not
surely worse than the good one).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from greenml.cli.options import db_option, json_option, sample_hz_option
from greenml.store.export import json_text

if TYPE_CHECKING:
    from greenml.diagnose.bisect import BisectStep, Measure
    from greenml.record.run_record import RunRecord

_EPILOG = """\b
COMMAND runs --repeats times at the good commit, at the bad one, and at each commit
git bisect picks; each step is judged against the good commit's runs with the
gate of greenml check (--max-increase, --compare): pass → good, fail → bad,
inconclusive → skip (reported, never guessed). The runs are stored as usual,
tagged greenml.bisect=COMMIT. The work tree must be clean; it is put back after.
\b
Examples:
  greenml bisect --good v1.2 --bad HEAD -- python train.py --steps 50
  greenml bisect --good 4f2a9c1 --bad main --repeats 5 --max-increase 10% -- make bench
\b
Exit status: 0 first bad commit named, 1 no regression to bisect, 2 bad input,
3 undecided (more --repeats per step may decide it).
"""


@click.command(epilog=_EPILOG, context_settings={"ignore_unknown_options": True})
@click.option("--good", required=True, metavar="REF", help="A commit whose energy is fine.")
@click.option("--bad", required=True, metavar="REF", help="A later commit that uses more.")
@click.option("--repeats", "runs", type=click.IntRange(min=1), default=3, show_default=True,
              help="Runs of COMMAND per commit.")  # fmt: skip
@click.option("--max-increase", default="5%", show_default=True, metavar="PERCENT",
              help="Allowed increase of energy per unit of work (as greenml check).")  # fmt: skip
@click.option("--unit", metavar="UNIT", help="Unit of work when runs tag several.")
@click.option("--compare", type=click.Choice(["auto", "total", "dynamic"]), default="auto",
              show_default=True, help="Energy compared (as greenml check).")  # fmt: skip
@click.option("--cpu-scope", type=click.Choice(["process", "machine"]), default="process",
              show_default=True, help="For the CPU/DRAM model: the command's process tree "
              "or the whole machine.")  # fmt: skip
@sample_hz_option(1.0)
@click.option("-C", "repo_dir", type=click.Path(file_okay=False, path_type=Path), default=".",
              help="The git work tree (default: the current directory).")  # fmt: skip
@json_option("Print the result as JSON on stdout.")
@db_option
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.pass_context
def bisect(
    ctx: click.Context, good: str, bad: str, runs: int, max_increase: str, unit: str | None,
    compare: str, cpu_scope: str, sample_hz: float, repo_dir: Path, as_json: bool,
    db_url: str | None, command: tuple[str, ...],
) -> None:  # fmt: skip
    """Name the commit that made COMMAND use more energy (git bisect, the gate as the test)."""
    from greenml.diagnose.bisect import bisect as run_bisect
    from greenml.diagnose.git_repo import GitRepo
    from greenml.report.gate import parse_threshold

    allowed = parse_threshold(max_increase)
    repo = GitRepo(repo_dir.resolve())
    measure = _measurer(list(command), repo.path, db_url, cpu_scope, sample_hz, as_json)

    def say(step: BisectStep) -> None:
        if not as_json:
            click.echo(f"  {step.line()}", err=True)

    result = run_bisect(repo, good, bad, measure, runs=runs, max_increase_rel=allowed,
                        compare=compare, unit=unit, on_step=say)  # fmt: skip
    if as_json:
        click.echo(json_text(result.to_dict(), ensure_ascii=False))
    else:
        for line in result.lines():
            click.echo(line)
    ctx.exit({"found": 0, "no-regression": 1, "undecided": 3}[result.outcome])


def _measurer(
    command: list[str], cwd: Path, db_url: str | None, cpu_scope: str, sample_hz: float,
    quiet: bool,
) -> Measure:  # fmt: skip
    """One measured, stored run of ``command`` in ``cwd`` per call (``greenml run``'s runner)."""
    import os

    from greenml.errors import ConfigError
    from greenml.run.runner import RunOptions, run_measured

    def measure(commit: str) -> RunRecord:
        if not quiet:
            click.echo(f"greenml bisect: measuring {commit[:12]}", err=True)
        here = Path.cwd()
        os.chdir(cwd)  # the command runs in the work tree, and its git state is recorded there
        try:
            result = run_measured(RunOptions(
                command=command, name="bisect", tags={"greenml.bisect": commit}, db_url=db_url,
                cpu_scope=cpu_scope, sample_hz=sample_hz, wait_for_store=True,
            ))  # fmt: skip
        finally:
            os.chdir(here)
        if result.record is None:
            raise ConfigError(f"run {result.run_id[:8]} was not stored "
                              f"({result.store_error or 'spooled'}): cannot judge it")  # fmt: skip
        return result.record

    return measure

