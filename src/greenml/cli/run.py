"""``greenml run [OPTIONS] -- COMMAND [ARGS]...``"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.cli import render
from greenml.cli.options import db_option

_PATH = click.Path(exists=True, dir_okay=False, path_type=str)
_ACCOUNTING_OPTIONS = (
    click.option("--region", help="Cloud region of the machine (e.g. us-central1), for carbon."),
    click.option("--zone", help="Grid zone (e.g. DE, US-CAL-CISO), for carbon."),
    click.option("--country", help="Country (ISO code), for a yearly average intensity."),
    click.option(
        "--ci", type=float, metavar="G_PER_KWH", help="Grid carbon intensity (gCO2eq/kWh)."
    ),
    click.option(
        "--intensity-trace",
        "--trace",
        "intensity_trace",
        type=_PATH,
        metavar="CSV",
        help="Hourly carbon intensity file.",
    ),
    click.option(
        "--intensity-fallback",
        is_flag=True,
        help="Where the trace has no data, use --zone/--region/--country (labelled).",
    ),
    click.option(
        "--intensity-provider",
        metavar="NAME",
        help="Who answers for --zone: static (yearly), electricitymaps, watttime, ukci.",
    ),
    click.option(
        "--pue", metavar="X|PROVIDER", help="PUE, or gcp, aws, azure, datacenter, personal."
    ),
    click.option("--price", type=float, metavar="USD_PER_KWH", help="Electricity price."),
    click.option(
        "--price-trace", type=_PATH, metavar="CSV", help="Hourly electricity prices (USD/MWh)."
    ),
    click.option("--instance", metavar="TYPE", help="Cloud instance type, for its hourly price."),
    click.option("--spot", is_flag=True, help="Use the instance's spot price."),
    click.option(
        "--instance-prices", type=_PATH, metavar="CSV", help="Your own instance price table."
    ),
)


def accounting_options(f: Any) -> Any:
    """Location, PUE and price options (carbon and cost of the run)."""
    for option in reversed(_ACCOUNTING_OPTIONS):
        f = option(f)
    return f


_WHEN_OPTIONS = (
    click.option(
        "--when",
        type=click.Choice(["now", "green"]),
        default="now",
        show_default=True,
        help="green: wait for the lowest-carbon start before --deadline (with --zone, "
        "--region or --intensity-trace).",
    ),
    click.option(
        "--deadline", metavar="TIME", help="--when green: finish by then (ISO 8601 with Z, or +8h)."
    ),
    click.option(
        "--duration",
        metavar="DURATION",
        help="--when green: how long COMMAND runs (90m, 4h); default: the last run of --name.",
    ),
    click.option(
        "--earliest-start", metavar="TIME", help="--when green: not before then (default: now)."
    ),
    click.option(
        "--interruptible",
        is_flag=True,
        help="--when green: pause COMMAND (SIGSTOP/SIGCONT) between planned chunks.",
    ),
    click.option("--min-chunk", metavar="DURATION", help="--interruptible: shortest piece (30m)."),
    click.option("--max-pieces", type=int, metavar="N", help="--interruptible: at most N pieces."),
)


def when_options(f: Any) -> Any:
    """``--when green`` and the job it plans (deadline, duration, interruption)."""
    for option in reversed(_WHEN_OPTIONS):
        f = option(f)
    return f


if TYPE_CHECKING:
    from greenml.measure.meter import Meter
    from greenml.run.projection import Projection
    from greenml.run.runner import RunOptions, RunResult


@click.command(
    context_settings={"allow_interspersed_args": False},
    options_metavar="[OPTIONS] --",
    epilog="Example: greenml run --name bert --tag lr=3e-5 -- python train.py --epochs 3",
)
@click.option("--name", help="A name for the run.")
@click.option(
    "--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Label the run (repeatable)."
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the run record to this JSON file.",
)
@db_option
@click.option(
    "--gpus",
    metavar="LIST",
    help="GPU indices to measure, e.g. 0,1, or 'none' (default: all visible).",
)
@click.option("--no-cpu", is_flag=True, help="Do not measure the CPU and DRAM.")
@click.option(
    "--cpu-scope",
    type=click.Choice(["process", "machine"]),
    default="process",
    show_default=True,
    help="For the CPU/DRAM model: the command's process tree or the whole machine.",
)
@click.option(
    "--sample-hz", type=float, default=1.0, show_default=True, help="Power sampling rate."
)
@click.option("--no-hostname", is_flag=True, help="Do not record the host name.")
@click.option("-q", "--quiet", is_flag=True, help="No live status line and no summary.")
@click.option(
    "--kill-on-exit",
    is_flag=True,
    help="If greenml is killed, send COMMAND SIGTERM (Linux); by default it runs on, unmeasured.",
)
@accounting_options
@when_options
@click.argument(
    "command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="COMMAND [ARGS]"
)
def run(
    name: str | None,
    tags: tuple[str, ...],
    json_path: Path | None,
    db_url: str | None,
    gpus: str | None,
    no_cpu: bool,
    cpu_scope: str,
    sample_hz: float,
    no_hostname: bool,
    quiet: bool,
    kill_on_exit: bool,
    command: tuple[str, ...],
    when: str,
    deadline: str | None,
    duration: str | None,
    earliest_start: str | None,
    interruptible: bool,
    min_chunk: str | None,
    max_pieces: int | None,
    **accounting: Any,
) -> None:
    """Run COMMAND, measure its energy, save the run, and exit with COMMAND's exit code."""
    from greenml.accounting.run_accounting import AccountingOptions
    from greenml.run.process import exit_like
    from greenml.run.runner import RunOptions, parse_tags, run_measured

    if json_path is not None and not json_path.resolve().parent.is_dir():
        raise click.BadParameter(f"directory of {json_path} does not exist", param_hint="--json")
    options = RunOptions(
        command=command,
        name=name,
        tags=parse_tags(tags),
        db_url=db_url,
        gpus=_parse_gpus(gpus),
        cpu=not no_cpu,
        cpu_scope=cpu_scope,
        sample_hz=sample_hz,
        include_hostname=not no_hostname,
        wait_for_store=json_path is not None,
        accounting=AccountingOptions(**accounting),
        kill_on_exit=kill_on_exit,
    )
    green = None
    planned = (deadline, duration, earliest_start, min_chunk, max_pieces)
    if when == "green" or interruptible or any(v is not None for v in planned):
        from greenml.run.green import GreenRequest, start_green

        request = GreenRequest(
            when=when, deadline=deadline, duration=duration, earliest_start=earliest_start,
            interruptible=interruptible, min_chunk=min_chunk, max_pieces=max_pieces, name=name,
            db_url=db_url, zone=accounting.get("zone"), region=accounting.get("region"),
            intensity_trace=accounting.get("intensity_trace"),
            intensity_provider=accounting.get("intensity_provider"),
        )  # fmt: skip
        green = start_green(request, options, quiet=quiet)  # checks, plans, waits (countdown)
        green.attach(options)  # the plan goes into the run record
    live = None if quiet or not sys.stderr.isatty() else _LiveLine()
    on_tick = live.update if live else None
    result = run_measured(
        options,
        on_tick=green.tick(on_tick) if green else on_tick,
        on_progress=live.progress if live else None,
    )
    if live:
        live.clear()
    if green is not None:
        green.finish()
    if not quiet:
        _summarize(result)
        if green is not None:
            green.summarize()
    if result.store_error:
        kept = (
            f"; kept in {result.spooled}, stored when the database answers"
            if result.spooled
            else ""
        )
        print(f"greenml: error: run not stored: {result.store_error}{kept}", file=sys.stderr)
    if json_path is not None:
        record = result.record or _unsaved_record(options, result)
        json_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    exit_like(result.exit_code)


def _parse_gpus(text: str | None) -> list[int] | None:
    if text is None:
        return None
    if text.strip().lower() == "none":
        return []
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a comma-separated list of indices", param_hint="--gpus"
        ) from None


class _LiveLine:
    """A one-line status on the terminal, redrawn in place."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._projection: Projection | None = None

    def progress(self, projection: Projection) -> None:
        self._projection = projection

    def update(self, meter: Meter) -> None:
        from greenml.run.runner import RUN_WINDOW

        m = meter.peek_window(RUN_WINDOW)
        elapsed = time.monotonic() - self._t0
        line = render.status_line(elapsed, meter.current_power_w(), m.total_j, m.uncertainty_rel)
        if self._projection is not None:
            line += progress_text(self._projection)
        # Cursor back to column 0: the command's own output overwrites the line
        # instead of being appended to it.
        sys.stderr.write(f"\r\x1b[2K{line}\r")
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\x1b[2K")
        sys.stderr.flush()


def progress_text(p: Projection) -> str:
    """`` · 35 % · ETA 12:04 · projected 1.2 kWh [1.1–1.3]`` for the live line."""
    eta = time.strftime("%H:%M", time.localtime(p.eta_unix_s))
    e = p.total_energy_j
    kwh = e.value / 3.6e6
    text = f" · {p.fraction * 100:.0f} % · ETA {eta} · projected {kwh:.3g} kWh"
    if e.low is not None and e.high is not None:
        text += f" [{e.low / 3.6e6:.3g}–{e.high / 3.6e6:.3g}]"
    if p.co2_g is not None:
        text += f" · {p.co2_g.value / 1000:.3g} kg CO2eq"
    return text


def _summarize(result: RunResult) -> None:
    m = result.measurement
    run_id = result.run_id
    verdict = "completed" if result.exit_code == 0 else f"failed (exit {result.exit_code})"
    title = f"greenml run {run_id} · {verdict} · {render.duration(m.duration_s)}"
    render.print_err(render.measurement_table(m, title))
    blocks = result.accounting
    for line in render.carbon_lines(blocks.get("carbon")) + render.cost_lines(blocks.get("cost")):
        print(f"  {line}", file=sys.stderr)
    for note in result.notes:
        print(f"  note: {note}", file=sys.stderr)


def _unsaved_record(options: RunOptions, result: RunResult) -> dict[str, Any]:
    """The run record when the store could not take it (``--json`` still gets it)."""
    m = result.measurement
    return {
        "id": result.run_id,
        "name": options.name,
        "command": list(options.command),
        "started_at": m.started_at.isoformat(),
        "duration_s": m.duration_s,
        "exit_code": result.exit_code,
        "status": "completed" if result.exit_code == 0 else "failed",
        "energy": {**m.to_dict(), "notes": result.notes},
        "environment": {},
        "tags": options.tags,
        **result.accounting,
        **(options.extra() if options.extra is not None else {}),
        "saved": False,
        "store_error": result.store_error,
    }
