"""``greenml plan``: when and where to run a job, spot planning, replay studies, and waiting.

Each subcommand lives in its own module, imported when it is used.
"""

from __future__ import annotations

from typing import ClassVar

import click

from greenml.cli.lazy_group import LazyGroup

# subcommand → "module:attribute"
PLAN_COMMANDS = {
    "job": "greenml.cli.plan_job:job",
    "spot": "greenml.cli.plan_spot:spot",
    "replay": "greenml.cli.plan_replay:replay",
    "wait": "greenml.cli.plan_wait:wait",
}


class _PlanGroup(LazyGroup):
    commands_map = PLAN_COMMANDS
    moved_map: ClassVar[dict[str, str]] = {}


@click.group(cls=_PlanGroup, no_args_is_help=True)
def plan() -> None:
    """Plan jobs in greener, cheaper hours and places; spot planning; replay studies; wait."""
