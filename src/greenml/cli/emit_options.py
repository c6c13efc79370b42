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
    click.option(
        "--cluster-tz",
        metavar="TZ",
        help="For --emit slurm: the zone Slurm reads --begin in (IANA, e.g. Europe/Berlin; "
        "default: this machine's).",
    ),
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
    pieces: Sequence[tuple[datetime, float]],
    deadline: datetime | None = None,
    note: str | None = None,
) -> None:
    """Write the task --emit asked for to -o FILE and say so on stderr.

    ``pieces`` are (start, duration in seconds). Slurm gets every piece
    (a submit script chaining one job per piece when there are several);
    SkyPilot has no start time or time limit in a task, so it gets one task
    and the file lists every piece's window, to launch it in.
    """
    from greenml.resilience.signals import EXIT_REQUEUE
    from greenml.schedule.emit import (
        ClusterZone,
        Piece,
        Placement,
        skypilot_task,
        skypilot_yaml,
        slurm_script,
    )

    if not opts["output"]:
        raise ConfigError("--emit needs -o FILE")
    planned = [Piece(begin, duration_s) for begin, duration_s in sorted(pieces)]
    extra = ""
    if opts["emit"] == "skypilot":
        if opts.get("cluster_tz"):
            raise ConfigError("--cluster-tz is for --emit slurm (SkyPilot tasks carry no start)")
        task = skypilot_task(
            name=opts["job_name"],
            run=opts["run_cmd"],
            placements=[Placement.parse(i) for i in infras],
            use_spot=use_spot,
            accelerators=opts["accelerators"],
            checkpoint_bucket=opts["checkpoint_bucket"],
            recover_on_exit_codes=[EXIT_REQUEUE],  # greenml's "checkpointed, run me again"
        )
        comments = [note] if note else []
        if len(planned) > 1:
            comments += _skypilot_pieces(planned)
            extra = f" (one task for {len(planned)} pieces; the file lists when to launch each)"
        text = "".join(f"# {line}\n" for line in comments) + skypilot_yaml(task)
    else:
        tz = opts.get("cluster_tz")
        zone = ClusterZone.named(tz) if tz else ClusterZone.local()
        text = slurm_script(
            job_name=opts["job_name"], run=opts["run_cmd"], pieces=planned,
            deadline=deadline, zone=zone, note=note,
        )  # fmt: skip
        if len(planned) > 1:
            extra = f" ({len(planned)} pieces: submit with bash {opts['output']})"
    from greenml.store.protected_files import refuse_overwrite

    refuse_overwrite(Path(opts["output"]), "-o")
    Path(opts["output"]).write_text(text, encoding="utf-8")
    render.console(stderr=True).print(
        f"wrote the {opts['emit']} task to {opts['output']}{extra}", highlight=False, markup=False
    )


def _skypilot_pieces(pieces: Sequence[Any]) -> list[str]:
    from datetime import timedelta, timezone

    def utc(moment: datetime) -> str:
        return f"{moment.astimezone(timezone.utc):%Y-%m-%dT%H:%M}Z"

    lines = [
        f"The plan has {len(pieces)} pieces. A SkyPilot task has no start time or time limit,",
        "so this one task serves them all: launch it at each piece's start below and cancel it",
        "at the piece's end (sky jobs cancel); it resumes from its checkpoint each time.",
    ]
    for index, piece in enumerate(pieces, 1):
        end = piece.begin + timedelta(seconds=piece.duration_s)
        lines.append(f"piece {index}/{len(pieces)}: {utc(piece.begin)} to {utc(end)}")
    return lines
