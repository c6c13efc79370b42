"""``greenml ledger verify | export | verify-statement | keygen | show``: the run ledger."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, output_option, renamed
from greenml.errors import ConfigError
from greenml.store.export import json_text

_PEM = click.Path(dir_okay=False, path_type=Path)

ledger_option = click.option(
    "--ledger",
    "ledger_file",
    type=_PEM,
    help="Ledger file (default: $GREENML_LEDGER, or the one next to the store).",
)


@click.group()
def ledger() -> None:
    """Check and attest the tamper-evident ledger of finished runs."""


@ledger.command("verify")
@ledger_option
@db_option
@click.option("--public-key", type=_PEM, help="Require every entry signed by this key (PEM).")
def verify_cmd(ledger_file: Path | None, db_url: str | None, public_key: Path | None) -> None:
    """Check the hash chain, the signatures and (with the store) the run records.

    The store is checked with --db, or when --ledger is not given (the ledger
    is then the default store's). Exit 0 when intact, 1 listing each problem.
    """
    from greenml.ledger import verify
    from greenml.ledger.keys import key_id, load_public_key

    key = load_public_key(public_key) if public_key else None
    path = _ledger_path(ledger_file, db_url)
    if not path.exists():
        raise ConfigError(f"no ledger at {path} (no run has been ledgered yet?)")
    if db_url or ledger_file is None:
        with _open_store(db_url) as store:
            result = verify(path, store=store, public_key=key)
    else:
        result = verify(path, public_key=key)
    if key is not None and result.signers and key_id(key) not in result.signers:
        raise ConfigError(
            f"wrong public key {public_key}: it is key {key_id(key)}, the ledger is signed by "
            f"{', '.join(sorted(result.signers))}"
        )
    if not result.ok:
        for problem in result.problems:
            print(problem)
        print(f"ledger FAILED: {len(result.problems)} problem(s) in {path}", file=sys.stderr)
        raise click.exceptions.Exit(1)
    print(f"ledger OK: {result.count} entries, head {result.head or '-'}")
    if key is not None and result.signatures_checked:
        print(f"  {result.signatures_checked} signatures checked with key {key_id(key)}")
    elif key is None and any(e.signature for e in result.entries):
        print("  signatures not checked: give --public-key")
    if result.unledgered:
        shown = ", ".join(result.unledgered[:5]) + (" ..." if len(result.unledgered) > 5 else "")
        print(f"  note: {len(result.unledgered)} finished run(s) in the store are not in the "
              f"ledger (stored before it existed, or its append failed): {shown}")  # fmt: skip


@ledger.command("export")
@ledger_option
@db_option
@click.option("--key", "key_file", type=_PEM, required=True, help="Ed25519 private key (PEM).")
@output_option()
@click.option("--head-only", is_flag=True, help="Only the head hash and counts, no entries.")
def export_cmd(
    ledger_file: Path | None, db_url: str | None, key_file: Path, output: Path | None,
    head_only: bool,
) -> None:  # fmt: skip
    """Write a signed statement of the ledger that anyone can check with the public key."""
    from greenml.ledger import export

    statement = export(_ledger_path(ledger_file, db_url), key_file, head_only=head_only)
    text = json_text(statement, indent=2, ensure_ascii=False) + "\n"
    render.write_output(text, output)
    if output is None:
        return
    body = statement["statement"]
    print(f"statement of {body['count']} entries (head {body['head_hash']}) written to {output}")


@ledger.command("verify-statement")
@click.argument("statement_file", type=_PEM)
@click.option("--public-key", type=_PEM, required=True, help="The signer's public key (PEM).")
@click.option("--record", "record_file", type=_PEM, help="Also check this run record is in it.")
def verify_statement_cmd(statement_file: Path, public_key: Path, record_file: Path | None) -> None:
    """Check a signed statement with the public key alone (and that a run record is in it)."""
    from greenml.ledger import entries_of_run, statement_includes, verify_statement

    statement = _read_json(statement_file, "statement")
    check = verify_statement(statement, public_key)
    if not check.ok:
        for problem in check.problems:
            print(problem)
        print(f"statement REJECTED: {statement_file}", file=sys.stderr)
        raise click.exceptions.Exit(1)
    body = check.body
    print(f"statement OK: {body['count']} entries, head {body['head_hash']}, "
          f"{body['from']} to {body['to']}, signed by {body['signer']['fingerprint']}")  # fmt: skip
    if record_file is None:
        return
    record = _read_json(record_file, "run record")
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise ConfigError(f"{record_file} is not a run record (greenml runs export)")
    entry = statement_includes(statement, record)
    if entry is not None:
        print(f"run {record['id']} is included: seq {entry.seq}, record {entry.record_sha256}")
        return
    others = entries_of_run(statement, record["id"])
    why = ("the statement has this run with another record hash: the record was changed"
           if others else "the statement has no entry for this run")  # fmt: skip
    print(f"run {record['id']} is NOT included: {why}")
    raise click.exceptions.Exit(1)


@ledger.command("keygen")
@click.option(
    "--out-dir", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR", help="Folder for greenml-ledger.key (private, 0600) and greenml-ledger.pub.",
)  # fmt: skip
@renamed("--out", "--out-dir", "out_dir", metavar="DIR")
def keygen_cmd(out_dir: Path) -> None:
    """Write a new Ed25519 key pair for signing ledger entries and statements."""
    from greenml.ledger import generate_keypair

    private, public, fingerprint = generate_keypair(out_dir)
    print(f"private key: {private} (keep it secret)")
    print(f"public key:  {public}")
    print(f"fingerprint: {fingerprint}")
    print(f"sign new entries with: export GREENML_LEDGER_KEY={private}")


@ledger.command("show")
@ledger_option
@db_option
@click.option("-n", "--limit", type=click.IntRange(1, 100_000), default=20, show_default=True)
def show_cmd(ledger_file: Path | None, db_url: str | None, limit: int) -> None:
    """The newest entries of the ledger (no checks: see `greenml ledger verify`)."""
    from rich.table import Table

    from greenml.ledger import read_lines

    path = _ledger_path(ledger_file, db_url)
    lines = read_lines(path)[-limit:]
    table = Table(show_edge=False, pad_edge=False, title=str(path), title_justify="left")
    for header in ("seq", "appended (UTC)", "run", "record sha256", "entry hash", "key"):
        table.add_column(header, overflow="fold")
    for line in lines:
        e = line.entry
        if e is None:
            table.add_row("?", f"line {line.number}: {line.error}", "", "", "", "")
            continue
        table.add_row(
            str(e.seq), e.appended_at[:19].replace("T", " "), e.run_id,
            e.record_sha256[:16], e.entry_hash[:16], e.key_id or "-",
        )  # fmt: skip
    render.console().print(table)


def _ledger_path(ledger_file: Path | None, db_url: str | None) -> Path:
    """--ledger, else $GREENML_LEDGER, else the ledger next to the store."""
    if ledger_file is not None:
        return ledger_file
    from greenml.ledger import ledger_path

    path = ledger_path(db_url)
    if path is None:
        raise ConfigError("an in-memory store has no ledger: give --ledger")
    return path


def _open_store(db_url: str | None) -> Any:
    from greenml.cli.runs import open_ingested

    return open_ingested(db_url)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{what} {path} not found") from exc
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc}") from exc
