"""``greenml server``: the team server (JSON API and dashboard), and its tokens."""

from __future__ import annotations

import json
import sys

import click

from greenml.cli.options import db_option, json_option
from greenml.errors import ConfigError

EXTRA_HINT = "greenml server needs the server extra: pip install 'greenml[server]'"


@click.group(invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind (put a TLS reverse proxy in front for a team).")  # fmt: skip
@click.option("--port", type=click.IntRange(1, 65535), default=8787, show_default=True,
              help="Port (1-65535).")  # fmt: skip
@db_option
@click.option("--public-read", is_flag=True,
              help="Anyone may read runs and reports without a token (not upload).")  # fmt: skip
@click.option("--max-body-mb", type=click.FloatRange(0.001, 4096), default=256.0,
              show_default=True, help="Largest upload accepted, in MB.")  # fmt: skip
@click.pass_context
def server(
    ctx: click.Context, host: str, port: int, db_url: str | None, public_read: bool,
    max_body_mb: float,
) -> None:  # fmt: skip
    """Serve the team server: runs of every machine per project, JSON API at /api/v1,
    dashboard at /. Stops on Ctrl-C or SIGTERM."""
    if ctx.invoked_subcommand is not None:
        return
    try:
        import uvicorn

        from greenml.server.app import create_app
    except ImportError as exc:
        raise ConfigError(f"{EXTRA_HINT} ({exc.name} is missing)") from None
    app = create_app(db_url, public_read=public_read, max_body_bytes=int(max_body_mb * 1e6))
    store = app.state.greenml.store
    print(f"greenml server: http://{host}:{port}/ (store {store.url})", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, log_level="warning", server_header=False)


@server.group()
def token() -> None:
    """Create and revoke the server's API tokens."""


@token.command("create")
@click.option("--project", required=True, metavar="NAME",
              help="Project the token is for (made if new).")  # fmt: skip
@click.option("--role", type=click.Choice(["read", "write", "admin"]), default="write",
              show_default=True,
              help="read: see runs; write: also upload; admin: also make tokens.")  # fmt: skip
@db_option
@json_option()
def token_create(project: str, role: str, db_url: str | None, as_json: bool) -> None:
    """Create a token and print it once: it is stored only as a hash."""
    from greenml.store import access, open_store

    with open_store(db_url) as store:
        secret = access.create_token(store, project, role)
    if as_json:
        print(json.dumps({"project": project, "role": role, "token": secret}))
    else:
        print(secret)
        print(f"greenml: a {role} token for project {project!r}; it is not shown again",
              file=sys.stderr)  # fmt: skip


@token.command("revoke")
@click.argument("token_or_prefix")
@db_option
def token_revoke(token_or_prefix: str, db_url: str | None) -> None:
    """Revoke a token, given whole or by the prefix shown when it was made (gml_abcdef)."""
    from greenml.store import access, open_store

    with open_store(db_url) as store:
        count = access.revoke_token(store, token_or_prefix)
    if not count:
        raise ConfigError(f"no live token matches {token_or_prefix!r}")
    print(f"greenml: {count} token(s) revoked", file=sys.stderr)
