"""``greenml advise``: which machine, buy or rent, federated or central.

Each subcommand lives in its own module, imported when it is used.
"""

from __future__ import annotations

from typing import ClassVar

import click

from greenml.cli.lazy_group import LazyGroup

# subcommand → "module:attribute"
ADVISE_COMMANDS = {
    "hardware": "greenml.cli.advise_hardware:hardware",
    "tco": "greenml.cli.advise_tco:tco",
    "federated": "greenml.cli.advise_federated:federated",
}


class _AdviseGroup(LazyGroup):
    commands_map = ADVISE_COMMANDS
    moved_map: ClassVar[dict[str, str]] = {}


@click.group(cls=_AdviseGroup, no_args_is_help=True)
def advise() -> None:
    """Decide with numbers: which GPU or instance, buy or rent, federated or central."""
