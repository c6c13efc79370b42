"""The command group; each command lives in its own module, imported when it is used.

Lazy subcommands follow click's documented pattern: ``greenml run`` does not
pay for importing ``estimate`` or ``runs``.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from greenml import __version__

# command name → "module:attribute"
COMMANDS = {
    "run": "greenml.cli.run:run",
    "runs": "greenml.cli.runs:runs",
    "estimate": "greenml.cli.estimate:estimate",
    "ledger": "greenml.cli.ledger:ledger",
    "check": "greenml.cli.check:check",
    "report": "greenml.cli.report:report",
    "exporter": "greenml.cli.exporter:exporter",
    "monitor": "greenml.cli.monitor:monitor",
    "diagnose": "greenml.cli.diagnose:diagnose",
    "optimize": "greenml.cli.optimize:optimize",
    "gpu": "greenml.cli.gpu:gpu",
    "sweep": "greenml.cli.sweep:sweep",
    "plan": "greenml.cli.plan:plan",
    "wait": "greenml.cli.wait:wait",
    "compress": "greenml.cli.compress:compress",
    "serve": "greenml.cli.serve:serve",
    "schema": "greenml.cli.schema:schema",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (from ``commands_map``)."""

    commands_map: dict[str, str] = COMMANDS

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands_map)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = self.commands_map.get(cmd_name)
        if target is None:
            return None
        module, _, attribute = target.partition(":")
        command: Any = getattr(importlib.import_module(module), attribute)
        return command  # type: ignore[no-any-return]


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    no_args_is_help=True,
)
@click.version_option(__version__, prog_name="greenml")
def cli() -> None:
    """Measure the energy, carbon and cost of ML training and inference."""
