"""The command group; each command group lives in its own module."""

from __future__ import annotations

import click

from greenml import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, no_args_is_help=True)
@click.version_option(__version__, prog_name="greenml")
def cli() -> None:
    """Measure the energy, carbon and cost of ML training and inference."""


def _register() -> None:
    from greenml.cli.estimate import estimate
    from greenml.cli.run import run
    from greenml.cli.runs import runs

    cli.add_command(run)
    cli.add_command(runs)
    cli.add_command(estimate)


_register()
