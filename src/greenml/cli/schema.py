"""``greenml schema run-record``: the JSON Schemas of what greenml writes."""

from __future__ import annotations

import click


@click.group()
def schema() -> None:
    """Print the JSON Schema of a document greenml writes."""


@schema.command("run-record")
def run_record() -> None:
    """The run record: what greenml runs export and greenml run --json write,
    and the ledger hashes (JSON Schema draft 2020-12).

    A record without schema_version is of version 1.
    """
    from greenml.record.schema import shipped_schema_text

    click.echo(shipped_schema_text(), nl=False)
