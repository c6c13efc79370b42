"""``--emit skypilot|slurm``: the options ``greenml plan job`` and ``plan spot`` share."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from greenml.cli import render
from greenml.cli.options import output_option
from greenml.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option("--emit", type=click.Choice(["skypilot", "slurm"]), help="Write a task for it."),
    output_option("File for --emit."),
    click.option(
        "--run", "run_cmd", default="python train.py", show_default=True, help="For --emit."
    ),
    click.option("--job-name", default="greenml-job", show_default=True, help="For --emit."),
    click.option("--accelerators", metavar="NAME:COUNT", help="For --emit skypilot, e.g. A100:8."),
    click.option("--checkpoint-bucket", metavar="URL", help="For --emit skypilot: s3://… gs://…."),
)


def emit_options(command: F) -> F:
    """Add the --emit options to a command."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def cloud_infra(location: str) -> str:
    """SkyPilot's ``cloud/region`` for a cloud region greenml knows (``aws:eu-west-1`` …).

    Raises:
        ConfigError: The location is a grid zone or country, not a cloud region.
    """
    from greenml.accounting.static import cloud_region_source

    if "/" in location:
        return location
    try:
        label = cloud_region_source(location).intensity(0.0, 0.0).provenance.location
    except ConfigError:
        raise ConfigError(
            f"SkyPilot needs a cloud region, and {location!r} is not one greenml knows: "
            "plan with --region (e.g. aws:eu-north-1)"
        ) from None
    provider, _, region = label.partition(":")
    return f"{provider}/{region}"


def write_emit(
    opts: dict[str, Any],
    *,
    infras: Sequence[str],
    use_spot: bool,
    begin: datetime,
    duration_s: float,
    deadline: datetime | None = None,
    note: str | None = None,
) -> None:
    """Write the task --emit asked for to -o FILE and say so on stderr."""
    from greenml.resilience.signals import EXIT_REQUEUE
    from greenml.schedule.emit import Placement, skypilot_task, skypilot_yaml, slurm_header

    if not opts["output"]:
        raise ConfigError("--emit needs -o FILE")
    if opts["emit"] == "skypilot":
        task = skypilot_task(
            name=opts["job_name"],
            run=opts["run_cmd"],
            placements=[Placement.parse(i) for i in infras],
            use_spot=use_spot,
            accelerators=opts["accelerators"],
            checkpoint_bucket=opts["checkpoint_bucket"],
            recover_on_exit_codes=[EXIT_REQUEUE],  # greenml's "checkpointed, run me again"
        )
        text = skypilot_yaml(task)
    else:
        header = slurm_header(
            job_name=opts["job_name"], begin=begin, duration_s=duration_s, deadline=deadline
        )
        text = header + opts["run_cmd"] + "\n"
    if note:
        text = f"# {note}\n{text}" if opts["emit"] == "skypilot" else text.replace(
            "\n", f"\n# {note}\n", 1
        )
    Path(opts["output"]).write_text(text, encoding="utf-8")
    render.console(stderr=True).print(f"wrote the {opts['emit']} task to {opts['output']}")
