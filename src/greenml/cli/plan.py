"""``greenml plan``: when and where to run a job, replay studies, spot planning.

Each subcommand lives in its own module, imported when it is used.
"""

from __future__ import annotations

import click

from greenml.cli.app import LazyGroup

# subcommand → "module:attribute"
PLAN_COMMANDS = {
    "job": "greenml.cli.plan_job:job",
    "replay": "greenml.cli.plan_replay:replay",
    "spot": "greenml.cli.plan_spot:spot",
}


class _PlanGroup(LazyGroup):
    commands_map = PLAN_COMMANDS


@click.group(cls=_PlanGroup, no_args_is_help=True)
def plan() -> None:
    """Plan jobs in greener, cheaper hours and regions; replay studies; spot planning."""
