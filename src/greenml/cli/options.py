"""Options shared by several commands."""

from __future__ import annotations

import click

db_option = click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="Run store: a path, sqlite:///… or postgresql://… "
    "(default: $GREENML_DB or the per-user SQLite file).",
)
