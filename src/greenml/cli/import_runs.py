"""``greenml import codecarbon | carbontracker``: another tool's runs into the run store.

Each run keeps the tool's own method (``imported`` block, tag ``imported=TOOL``);
greenml never labels an imported figure as measured. Importing the same file twice
stores nothing new. The whole input is read and checked before anything is stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from greenml.cli.options import db_option

if TYPE_CHECKING:
    from greenml.importers.records import ImportedRun


@click.group("import")
def import_runs() -> None:
    """Store runs measured by another tool (CodeCarbon, Carbontracker) beside greenml's own."""


@import_runs.command("codecarbon")
@db_option
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
def codecarbon(db_url: str | None, path: Path) -> None:
    """CodeCarbon's emissions.csv, or the JSON of its HTTP/API output (one object or a list)."""
    from greenml.errors import ConfigError
    from greenml.importers.codecarbon import parse_codecarbon

    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    _store(db_url, parse_codecarbon(text, str(path)))


@import_runs.command("carbontracker")
@db_option
@click.argument("log_dir", type=click.Path(file_okay=False, path_type=Path))
def carbontracker(db_url: str | None, log_dir: Path) -> None:
    """Carbontracker's log directory (its log_dir): one run per *_carbontracker.log."""
    from greenml.importers.carbontracker import parse_carbontracker

    _store(db_url, parse_carbontracker(log_dir))


def _store(db_url: str | None, runs: list[ImportedRun]) -> None:
    from greenml.importers.records import IMPORTED_UNCERTAINTY_REL, store_imported
    from greenml.quantities import co2, energy
    from greenml.store import open_store

    with open_store(db_url) as store:
        new, old = store_imported(store, runs)
    for run in runs:
        label = f"{run.tool} {run.tool_version or ''}".strip()
        rel = IMPORTED_UNCERTAINTY_REL
        carbon = "" if run.co2_g is None else f", {co2(run.co2_g, uncertainty_rel=rel)}"
        click.echo(f"{_id(run)}  {energy(run.total_j, uncertainty_rel=rel)}{carbon}  "
                   f"({label}, its own method, estimated to greenml)")
    click.echo(f"imported {len(new)} run(s); {len(old)} already stored", err=True)


def _id(run: ImportedRun) -> str:
    from greenml.importers.records import run_id

    return run_id(run.tool, run.source_run_id)
