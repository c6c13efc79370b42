"""``greenml optimize``: advisors that cut training energy (power limits, knobs, batch sizes).

Each subcommand lives in its own module, imported when it is used.
"""

from __future__ import annotations

from typing import ClassVar

import click

from greenml.cli.lazy_group import LazyGroup

# subcommand → "module:attribute"
OPTIMIZE_COMMANDS = {
    "power-plan": "greenml.cli.optimize_power_plan:power_plan",
    "sweep": "greenml.cli.optimize_sweep:sweep",
    "simulate": "greenml.cli.optimize_simulate:simulate",
    "straggler-sim": "greenml.cli.optimize_straggler:straggler_sim",
}


class _OptimizeGroup(LazyGroup):
    commands_map = OPTIMIZE_COMMANDS
    moved_map: ClassVar[dict[str, str]] = {}


@click.group(cls=_OptimizeGroup, no_args_is_help=True)
def optimize() -> None:
    """Cut the energy of training: power limits, software knobs, batch sizes, stragglers."""
