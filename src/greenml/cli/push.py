"""``greenml push``: send the runs that wait for the team server (or named runs) now."""

from __future__ import annotations

import json
import sys

import click

from greenml.cli.options import db_option, json_option
from greenml.errors import ConfigError, UploadError


@click.command()
@click.argument("run_ids", nargs=-1, metavar="[RUN_ID]...")
@click.option("--server", "server_url", metavar="URL",
              help="Team server (default: $GREENML_SERVER or the config file).")  # fmt: skip
@db_option
@json_option()
def push(run_ids: tuple[str, ...], server_url: str | None, db_url: str | None,
         as_json: bool) -> int:  # fmt: skip
    """Send runs to the team server: those waiting since it was unreachable, or RUN_IDs.

    Exit 1 when some run could not be sent (it keeps waiting), 0 otherwise.
    """
    from greenml.run.server_settings import server_settings
    from greenml.run.upload import push_pending, send_run
    from greenml.store import open_store

    settings = server_settings(server_url)
    if settings is None:
        raise ConfigError("no team server: pass --server URL or set GREENML_SERVER")
    with open_store(db_url) as store:
        sent, waiting, errors = push_pending(store, settings)
        for run_id in run_ids:
            try:
                full = store.resolve_id(run_id)
                sent += 1 if send_run(store, full, settings, None) else 0
            except UploadError as exc:
                errors.append(f"run {run_id}: {exc}")
    if as_json:
        print(json.dumps({"server": settings.url, "sent": sent, "waiting": waiting,
                          "errors": errors}))  # fmt: skip
    else:
        for line in errors:
            print(f"greenml: {line}", file=sys.stderr)
        print(f"greenml: {sent} run(s) sent to {settings.url}; {waiting} still waiting",
              file=sys.stderr)  # fmt: skip
    return 1 if errors else 0
