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

from typing import ClassVar

import click

from greenml.__version__ import __version__
from greenml.cli.lazy_group import LazyGroup as BaseLazyGroup
from greenml.cli.lazy_group import set_root

# command name → "module:attribute"
COMMANDS = {
    "run": "greenml.cli.run:run",
    "runs": "greenml.cli.runs:runs",
    "jobs": "greenml.cli.jobs:jobs",
    "estimate": "greenml.cli.estimate:estimate",
    "ledger": "greenml.cli.ledger:ledger",
    "check": "greenml.cli.check:check",
    "bisect": "greenml.cli.bisect:bisect",
    "report": "greenml.cli.report:report",
    "exporter": "greenml.cli.exporter:exporter",
    "monitor": "greenml.cli.monitor:monitor",
    "diagnose": "greenml.cli.diagnose:diagnose",
    "optimize": "greenml.cli.optimize:optimize",
    "gpu": "greenml.cli.gpu:gpu",
    "doctor": "greenml.cli.doctor:doctor",
    "calibrate": "greenml.cli.calibrate:calibrate",
    "plan": "greenml.cli.plan:plan",
    "compress": "greenml.cli.compress:compress",
    "inference": "greenml.cli.inference:inference",
    "schema": "greenml.cli.schema:schema",
    "advise": "greenml.cli.advise:advise",
    "label": "greenml.cli.label:label",
    "config": "greenml.cli.config:config",
    "server": "greenml.cli.server:server",
    "push": "greenml.cli.push:push",
    "llm": "greenml.cli.llm:llm",
    "agent": "greenml.cli.agent:agent",
    "savings": "greenml.cli.savings:savings",
    "export": "greenml.cli.export:export",
    "import": "greenml.cli.import_runs:import_runs",
}

# commands that do not first send runs waiting for the team server: `run` must not delay the
# user's program (its own upload sends them), `push` and `server` do it their own way
NO_FLUSH = frozenset({"run", "push", "server"})

# old name → where the command is now (under `greenml`); hidden, kept for one release
MOVED = {
    "sweep": "optimize sweep",
    "wait": "plan wait",
    "serve": "inference",  # `serve` and `server` were two words for two things
    "audit": "report audit",  # one report family
}


class LazyGroup(BaseLazyGroup):
    """The root group: ``greenml``'s own commands and old spellings."""

    commands_map: ClassVar[dict[str, str]] = COMMANDS
    moved_map: ClassVar[dict[str, str]] = MOVED


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
        from greenml.run.spool_paths import uploads_waiting

        if uploads_waiting():  # one listing: the uploader is imported only when needed
            from greenml.run.upload import flush_pending

            flush_pending()  # runs that waited for the team server go up now (quietly)


set_root(cli)
