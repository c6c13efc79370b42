"""The command group; each command lives in its own module, imported when it is used.

Lazy subcommands follow click's documented pattern: ``greenml run`` does not
pay for importing ``estimate`` or ``runs``. Commands that moved keep their old
spelling as a hidden alias that still works and says where the command went.

Lazy imports, in every command module of this package: what a command needs
(SQLAlchemy, numpy, torch, the report renderer ...) is imported inside the
command's function, so each command pays only for itself (``greenml run -- true``
is ~0.2 s).
"""

from __future__ import annotations

import copy
import importlib
from typing import Any, ClassVar

import click

from greenml import __version__

# command name → "module:attribute"
COMMANDS = {
    "run": "greenml.cli.run:run",
    "runs": "greenml.cli.runs:runs",
    "jobs": "greenml.cli.jobs:jobs",
    "estimate": "greenml.cli.estimate:estimate",
    "ledger": "greenml.cli.ledger:ledger",
    "check": "greenml.cli.check:check",
    "report": "greenml.cli.report:report",
    "exporter": "greenml.cli.exporter:exporter",
    "monitor": "greenml.cli.monitor:monitor",
    "diagnose": "greenml.cli.diagnose:diagnose",
    "optimize": "greenml.cli.optimize:optimize",
    "gpu": "greenml.cli.gpu:gpu",
    "doctor": "greenml.cli.doctor:doctor",
    "plan": "greenml.cli.plan:plan",
    "compress": "greenml.cli.compress:compress",
    "serve": "greenml.cli.serve:serve",
    "schema": "greenml.cli.schema:schema",
    "advise": "greenml.cli.advise:advise",
    "audit": "greenml.cli.audit:audit",
    "label": "greenml.cli.label:label",
    "config": "greenml.cli.config:config",
    "server": "greenml.cli.server:server",
    "push": "greenml.cli.push:push",
    "llm": "greenml.cli.llm:llm",
}

# commands that do not first send runs waiting for the team server: `run` must not delay the
# user's program (its own upload sends them), `push` and `server` do it their own way
NO_FLUSH = frozenset({"run", "push", "server"})

# old name → where the command is now (under `greenml`); hidden, kept for one release
MOVED = {
    "sweep": "optimize sweep",
    "wait": "plan wait",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (from ``commands_map``).

    ``moved_map`` names old spellings: hidden commands that run the command's new
    home (a path under ``greenml``) after one line on stderr saying where it went.
    """

    commands_map: ClassVar[dict[str, str]] = COMMANDS
    moved_map: ClassVar[dict[str, str]] = MOVED

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *self.commands_map, *self.moved_map]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.moved_map:
            return moved_command(ctx, self.moved_map[cmd_name])
        target = self.commands_map.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = target.partition(":")
        command: Any = getattr(importlib.import_module(module), attribute)
        return command  # type: ignore[no-any-return]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name in self.moved_map and not ctx.resilient_parsing:
            old = " ".join([*command_path(ctx), name])
            click.echo(f"greenml: `{old}` is now `greenml {self.moved_map[name]}`", err=True)
        return name, command, rest


def command_path(ctx: click.Context) -> list[str]:
    """``["greenml", "gpu"]`` for the context of ``greenml gpu`` (whatever the program name)."""
    names: list[str] = []
    while ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return ["greenml", *names]


def moved_command(ctx: click.Context, path: str) -> click.Command:
    """The command at ``path`` (e.g. ``optimize sweep``), as a hidden copy for its old name."""
    command: click.Command | None = cli
    for part in path.split():
        assert isinstance(command, click.Group), path
        command = command.get_command(ctx, part)
    assert command is not None, path
    alias = copy.copy(command)
    alias.hidden = True
    return alias


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
)
@click.version_option(__version__, prog_name="greenml")
@click.option(
    "-v", "--verbose", count=True, help="Show greenml's log on stderr (-v: info, -vv: debug)."
)
def cli(verbose: int) -> None:
    """Measure the energy, carbon and cost of ML training and inference."""
    if verbose:
        import logging

        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("greenml %(levelname)s %(name)s: %(message)s"))
        log = logging.getLogger("greenml")
        log.addHandler(handler)
        log.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
    ctx = click.get_current_context()
    if ctx.invoked_subcommand not in NO_FLUSH and not ctx.resilient_parsing:
        from greenml.run.upload import flush_pending

        flush_pending()  # runs that waited for the team server go up now (quietly)
