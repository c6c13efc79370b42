"""``greenml config show | variables | path``: the effective settings and where each came
from, the environment variables greenml reads, the config file's path."""

from __future__ import annotations

from dataclasses import replace

import click

from greenml.cli.options import json_option
from greenml.store.export import json_text


@click.group()
def config() -> None:
    """Show the effective settings and the config file's path."""


@config.command("show")
@json_option("Print the settings as JSON on stdout.")
def show(as_json: bool) -> None:
    """Each setting's effective value and where it came from (environment > file > default)."""
    from greenml.config.settings import SECRET, effective
    from greenml.store.url import mask_url

    values = [
        replace(e, value=_masked(e.value)) if e.setting.name in SECRET
        else replace(e, value=mask_url(e.value)) if isinstance(e.value, str) and "://" in e.value
        else e
        for e in effective()
    ]  # fmt: skip
    if as_json:
        rows = [{"name": e.setting.name, "value": e.value, "source": e.source,
                 "env": e.setting.env} for e in values]  # fmt: skip
        print(json_text(rows, ensure_ascii=False))
        return
    from rich.table import Table

    from greenml.cli import render

    table = Table(show_edge=False, pad_edge=False)
    for header in ("setting", "value", "from", "variable", "meaning"):
        table.add_column(header, overflow="fold")
    for e in values:
        shown = "-" if e.value in (None, []) else ", ".join(e.value) if isinstance(
            e.value, list) else str(e.value)  # fmt: skip
        table.add_row(e.setting.name, render.safe(shown), render.safe(e.source),
                      e.setting.env or "", e.setting.help)  # fmt: skip
    render.console().print(table)


def _masked(value: object) -> object:
    """A secret as its first 4 characters and a mask, so a user can tell which one is set."""
    return None if value in (None, "") else f"{str(value)[:4]}…(set)"


@config.command("variables")
@json_option("Print the variables as JSON on stdout.")
def variables(as_json: bool) -> None:
    """Every GREENML_* variable greenml reads, whether it is set (secrets masked)."""
    import os

    from greenml.config.variables import all_variables
    from greenml.store.url import mask_url

    rows = []
    for name, v in sorted(all_variables().items()):
        value: object = os.environ.get(name) or None
        if value is not None:
            value = _masked(value) if v.secret else mask_url(str(value))
        rows.append({"name": name, "value": value, "kind": v.kind, "help": v.help})
    if as_json:
        print(json_text(rows, ensure_ascii=False))
        return
    from rich.table import Table

    from greenml.cli import render

    table = Table(show_edge=False, pad_edge=False)
    for header in ("variable", "value", "kind", "meaning"):
        table.add_column(header, overflow="fold")
    for r in rows:
        table.add_row(str(r["name"]), render.safe("-" if r["value"] is None else str(r["value"])),
                      str(r["kind"]), str(r["help"]))  # fmt: skip
    render.console().print(table)


@config.command("path")
def path() -> None:
    """The config file greenml reads (it may not exist yet)."""
    from greenml.config.settings import config_path

    print(config_path())
