"""``greenml runs list | show | export``: read the run store."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, json_option, output_option, server_read_option
from greenml.store.export import json_text

if TYPE_CHECKING:
    from greenml.record.blocks import JobBlock
    from greenml.record.run_record import RunRecord
    from greenml.store.sqlite_reads import SqliteReader


@click.group()
def runs() -> None:
    """List, show and export stored runs."""


@runs.command("list")
@db_option
@server_read_option
@click.option("-n", "--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
@click.option("--name", help="Only runs with this name.")
@click.option("--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Only runs with this tag.")
@json_option("Print JSON lines on stdout instead of a table.")
def list_runs(
    db_url: str | None, server_url: str | None, limit: int, name: str | None,
    tags: tuple[str, ...], as_json: bool,
) -> None:  # fmt: skip
    """The newest runs, one line each (from the team server when one is configured)."""
    from rich.table import Table

    from greenml.cli.read_from import read_server

    server = read_server(db_url, server_url)
    if server is not None:
        from greenml.jobs.remote import server_runs
        from greenml.run.runner import parse_tags

        rows = server_runs(server, limit, name, parse_tags(tags))
    else:
        rows = _listed_rows(db_url, limit, name, tags)
    if as_json:
        for row in rows:
            print(json_text(row, ensure_ascii=False))
        return
    if not rows:
        print("no runs stored yet: try `greenml run -- python train.py`")
        return
    table = Table(show_edge=False, pad_edge=False)
    for header in ("id", "name", "started (UTC)", "status", "duration", "energy", "command"):
        table.add_column(header, overflow="fold")
    for row in rows:
        kwh = row.get("total_kwh")
        table.add_row(
            render.safe(row["id"]),
            render.safe(row.get("name") or ""),
            _short_time(row.get("started_at")),
            row["status"],
            render.duration(row["duration_s"]) if row.get("duration_s") is not None else "-",
            _listed_energy(kwh, partial=bool(row.get("partial"))),
            render.safe(" ".join(row.get("command") or [])[:60] or _imported(row)),
        )
    render.console().print(table)


@runs.command("show")
@db_option
@click.argument("run_id")
def show(db_url: str | None, run_id: str) -> None:
    """One run: what ran, how it ended, energy per component and device."""
    typed = _run_record(db_url, run_id)
    console = render.console()
    exited = f" (exit {typed.exit_code})" if typed.exit_code is not None else ""
    duration = typed.duration_s
    lines = [
        ("id", render.safe(typed.id)),
        ("name", render.safe(typed.name or "")),
        ("command", render.safe(" ".join(typed.command))),
        ("started", typed.started_at),
        ("duration", render.duration(duration) if duration is not None else "-"),
        ("status", typed.status + exited),
        ("tags", render.safe(", ".join(f"{k}={v}" for k, v in typed.tags.items()))),
    ]
    if typed.job is not None:
        lines.append(("job", render.safe(_job_line(typed.job))))
    for label, value in lines:
        console.print(f"[bold]{label:>9}[/bold]  {value}", highlight=False, markup=True)
    record = typed.to_dict()  # the blocks as renderers take them (kept even if malformed)
    console.print(_energy_table(record.get("energy") or {}))
    carbon, cost = record.get("carbon"), record.get("cost")
    accounted = render.carbon_lines(carbon) + render.cost_lines(cost, show_unknown=True)
    for line in accounted + render.footprint_lines(record):
        console.print(f"  {line}", highlight=False, markup=False)
    env = record.get("environment") or {}
    if env:
        console.print(f"[bold]{'env':>9}[/bold]  {_environment_line(env)}", highlight=False)
    for line in _detail_lines(record):
        console.print(line, highlight=False, markup=False)


def _imported(row: dict[str, Any]) -> str:
    """``imported: codecarbon`` for a run read by ``greenml import`` (it has no command)."""
    tool = (row.get("tags") or {}).get("imported")
    return f"imported: {tool}" if tool else ""


def _job_line(job: JobBlock) -> str:
    """``4242 (slurm) · node gpu-0 · node rank 1 of 4`` for ``runs show``."""
    parts = [f"{job.job_id} ({job.source})"]
    if job.step_id is not None:
        parts.append(f"step {job.step_id}")
    if job.node:
        parts.append(f"node {job.node}")
    if job.node_rank is not None:
        of = f" of {job.expected_nodes}" if job.expected_nodes is not None else ""
        parts.append(f"node rank {job.node_rank}{of}")
    return " · ".join(parts) + "  (greenml jobs show " + job.job_id + ")"


def _listed_energy(kwh: float | None, *, partial: bool) -> str:
    """The energy column of ``runs list``: an unfinished run shows what its samples hold."""
    if kwh is None:
        return "-"
    return render.energy(kwh * 3.6e6) + (" (partial)" if partial else "")


MAX_WINDOWS_SHOWN = 10


def _detail_lines(record: dict[str, Any]) -> list[str]:
    """What ``runs show`` adds below the figures: windows, the projection, the notes."""
    lines = []
    windows = [w for w in record.get("windows") or [] if isinstance(w, dict)]
    if windows:
        lines.append(f"  windows: {len(windows)}")
        for w in windows[:MAX_WINDOWS_SHOWN]:
            energy = w.get("energy_j", w.get("total_j"))
            shown = render.energy(float(energy)) if isinstance(energy, (int, float)) else "-"
            secs = w.get("duration_s")
            took = render.duration(float(secs)) if isinstance(secs, (int, float)) else "-"
            lines.append(f"    {render.safe(w.get('name', '?'))}: {shown} over {took}")
        if len(windows) > MAX_WINDOWS_SHOWN:
            lines.append(f"    … and {len(windows) - MAX_WINDOWS_SHOWN} more (runs export)")
    projection = (record.get("progress") or {}).get("projection")
    if isinstance(projection, dict):
        total = (projection.get("total_energy_j") or {}).get("value")
        if isinstance(total, (int, float)):
            done = projection.get("fraction", 0.0) * 100
            lines.append(f"  projection: {render.energy(float(total))} at 100 % "
                         f"(reported {done:.0f} % done)")  # fmt: skip
    notes = (record.get("energy") or {}).get("notes") or []
    lines += [f"  note: {render.safe(n)}" for n in notes]
    return lines


@runs.command("export")
@db_option
@click.argument("run_id", required=False)
@click.option("--all", "all_runs", is_flag=True, help="Every run, one row each (a table).")
@click.option("--name", help="--all: only runs with this name.")
@click.option(
    "--tag", "tags", multiple=True, metavar="KEY=VALUE", help="--all: only runs with this tag."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "csv", "parquet"]),
    default="json",
    show_default=True,
    help="One run: json (the record) or csv (its power samples). --all: csv, parquet "
    "(needs -o) or json (one row per line); the columns of greenml.runs().",
)
@output_option()
def export(
    db_url: str | None, run_id: str | None, all_runs: bool, name: str | None,
    tags: tuple[str, ...], fmt: str, output: Path | None,
) -> None:  # fmt: skip
    """Write a run record (JSON) or its samples (CSV); with --all, a table of every run."""
    from greenml.errors import ConfigError
    from greenml.store.export import record_to_json, samples_to_csv

    if all_runs == (run_id is not None):
        raise ConfigError("give a RUN_ID or --all")
    if all_runs:
        _export_table(db_url, name, tags, fmt, output)
        return
    if fmt == "parquet":
        raise ConfigError("--format parquet is for --all (a table of runs)")
    with open_ingested(db_url) as store:
        record = store.get_record(run_id)
        samples = store.samples(record["id"]) if fmt == "csv" else []
    handle = _open_output(output)
    try:
        if fmt == "json":
            handle.write(record_to_json(record) + "\n")
        else:
            samples_to_csv(samples, handle)
    finally:
        if output:
            handle.close()


def _open_output(output: Path | None) -> Any:
    """``output`` opened for writing (never a store or ledger), or stdout."""
    if output is None:
        return sys.stdout
    from greenml.store.protected_files import refuse_overwrite

    refuse_overwrite(output, "-o")
    return output.open("w", newline="")


def _export_table(
    db_url: str | None, name: str | None, tags: tuple[str, ...], fmt: str, output: Path | None
) -> None:
    """``runs export --all``: one row per run, as greenml.runs() gives them."""
    from greenml.errors import ConfigError, MissingExtra
    from greenml.run.runner import parse_tags
    from greenml.run.tables import table_rows
    from greenml.store.table import columns, rows_to_csv

    if fmt == "parquet" and output is None:
        raise ConfigError("--format parquet writes a binary file: give -o FILE")
    with open_ingested(db_url) as store:
        rows = table_rows(store, name=name, tag=parse_tags(tags) or None)
    if fmt == "parquet":
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingExtra("--format parquet", "tables", exc) from None
        from greenml.store.protected_files import refuse_overwrite

        assert output is not None  # checked above: parquet needs -o
        refuse_overwrite(output, "-o")
        try:
            pd.DataFrame(rows, columns=columns(rows)).to_parquet(output, index=False)
        except ImportError as exc:
            raise MissingExtra("--format parquet", "tables", exc) from None
        return
    handle = _open_output(output)
    try:
        if fmt == "csv":
            rows_to_csv(rows, handle)
        else:
            for row in rows:
                handle.write(json_text(row, ensure_ascii=False) + "\n")
    finally:
        if output:
            handle.close()


def _listed_rows(
    db_url: str | None, limit: int, name: str | None, tags: tuple[str, ...]
) -> list[dict[str, Any]]:
    """``runs list``'s rows: through the light SQLite reader when it can answer."""
    reader = None if tags else light_reader(db_url)
    if reader is not None:
        with reader:
            listed = reader.list_runs(limit=limit, name=name)
        if listed is not None:
            return listed
    from greenml.run.runner import parse_tags

    with open_ingested(db_url) as store:
        rows: list[dict[str, Any]] = store.list_runs(limit=limit, name=name,
                                                     tag=parse_tags(tags) or None)  # fmt: skip
    return rows


def _run_record(db_url: str | None, run_id: str) -> RunRecord:
    """``runs show``'s record: through the light SQLite reader when it can answer."""
    reader = light_reader(db_url)
    found = None
    if reader is not None:
        with reader:
            found = reader.get_record_dict(run_id)
    if found is not None:
        from greenml.record.run_record import RunRecord

        return RunRecord.from_dict(found)
    with open_ingested(db_url) as store:
        typed: RunRecord = store.get_run_record(run_id)
    return typed


def light_reader(db_url: str | None) -> SqliteReader | None:
    """The SQLAlchemy-free reader of a SQLite store of this schema with nothing waiting in the
    spool (:mod:`greenml.store.sqlite_reads`); ``None``: open the full store."""
    from greenml.run.spool import has_pending
    from greenml.store.sqlite_reads import open_sqlite_reader
    from greenml.store.url import resolve_url, sqlite_path

    url = resolve_url(db_url)
    path = sqlite_path(url)
    if path is None or has_pending(db_url or ""):
        return None
    return open_sqlite_reader(path, url)


def open_ingested(db_url: str | None) -> Any:
    """The store for reading, with runs still waiting in the spool stored first.

    Reading creates nothing: a SQLite file that does not exist is an error when
    it was named (``--db``, ``GREENML_DB``), and an empty store when it is the
    default one, unless runs wait in the spool for it (then it is created to
    take them).
    """
    import os

    from greenml.errors import ConfigError
    from greenml.run.spool import has_pending, ingest_pending
    from greenml.store import open_store
    from greenml.store.url import resolve_url, sqlite_path

    path = sqlite_path(resolve_url(db_url))
    if path is not None and not path.exists() and not has_pending(db_url or ""):
        if db_url or os.environ.get("GREENML_DB"):
            raise ConfigError(f"no run store at {path} (nothing has been stored there)")
        return open_store("sqlite://")  # the default store, before any run: empty
    store = open_store(db_url)
    try:
        ingest_pending(store, db_url or "")
    except BaseException:
        store.close()
        raise
    return store


def _energy_table(energy: dict[str, Any]) -> Any:
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False, title="energy", title_justify="left")
    for header in ("component", "device", "energy", "method", "uncertainty", "note"):
        table.add_column(header, overflow="fold")
    for comp_name, comp in (energy.get("components") or {}).items():
        for key, dev in (comp.get("devices") or {}).items():
            table.add_row(
                comp_name,
                f"{key} {dev.get('name', '')}",
                render.energy(dev["energy_j"]),
                dev["method"],
                render.percent(dev["uncertainty_rel"]),
                dev.get("note", ""),
            )
    if "total_j" in energy:
        table.add_section()
        rel = energy.get("uncertainty_rel")
        table.add_row(
            "total",
            "",
            render.energy(energy["total_j"]),
            "",
            render.percent(rel) if rel is not None else "",
            energy.get("note", ""),
            style="bold",
        )
    return table


def _environment_line(env: dict[str, Any]) -> str:
    python = (env.get("python") or {}).get("version", "?")
    cpu = (env.get("cpu") or {}).get("model", "?")
    gpus = [g.get("name", "?") for g in (env.get("gpu") or {}).get("gpus", [])]
    git = env.get("git") or {}
    commit = (
        f" · git {git['commit'][:10]}{' (dirty)' if git.get('dirty') else ''}"
        if git.get("commit")
        else ""
    )
    return f"Python {python} · {cpu} · {', '.join(gpus) or 'no GPU'}{commit}"


def _short_time(iso: str | None) -> str:
    if not iso:
        return "-"
    return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M:%S")
