"""``greenml run [OPTIONS] -- COMMAND [ARGS]...``"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.cli.help_sections import SectionedCommand
from greenml.cli.options import (
    ci_option,
    country_option,
    db_option,
    footprint_options,
    gpus_option,
    instance_option,
    intensity_provider_option,
    intensity_trace_option,
    json_out_option,
    parse_gpus,
    price_option,
    pue_option,
    region_option,
    renamed,
    sample_hz_option,
    trace_renamed,
    zone_option,
)
from greenml.cli.run_dirty_cap import CAP_OPTIONS, cap_summary, dirty_cap_options, pop_cap_request
from greenml.run.session import DEFAULT_CPU_SCOPE
from greenml.store.export import json_text

_PATH = click.Path(exists=True, dir_okay=False, path_type=str)
_ACCOUNTING_OPTIONS = (
    region_option(),
    zone_option(),
    country_option,
    ci_option,
    intensity_trace_option(),
    trace_renamed,
    click.option(
        "--intensity-fallback",
        is_flag=True,
        help="Where the trace has no data, use --zone/--region/--country (labelled).",
    ),
    intensity_provider_option,
    pue_option,
    price_option,
    click.option(
        "--price-trace", type=_PATH, metavar="CSV", help="Hourly electricity prices (USD/MWh)."
    ),
    instance_option,
    click.option("--spot", is_flag=True, help="Use the instance's spot price."),
    click.option(
        "--instance-prices", type=_PATH, metavar="CSV", help="Your own instance price table."
    ),
)


def accounting_options(f: Any) -> Any:
    """Location, PUE and price options (carbon and cost of the run), market carbon and water."""
    for option in reversed(_ACCOUNTING_OPTIONS):
        f = option(f)
    return footprint_options(f)


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


RUN_HELP_SECTIONS = (
    ("The run", ("--name", "--tag", "--db", "--json-out", "--server", "-q", "--no-hostname",
                 "--kill-on-exit", "--help")),
    ("What is measured", ("--gpus", "--no-cpu", "--cpu-scope", "--sample-hz", "--node-meter")),
    ("Distributed jobs", ("--job", "--node-rank", "--job-nodes", "--no-job")),
    ("Carbon intensity and PUE", ("--region", "--zone", "--country", "--ci", "--intensity-trace",
                                  "--intensity-fallback", "--intensity-provider", "--pue")),
    ("Market-based carbon and water", ("--supplier-ci", "--certificates", "--market", "--wue")),
    ("Cost", ("--price", "--price-trace", "--instance", "--spot", "--instance-prices")),
    ("Budgets, trackers and exports", ("--budget", "--on-budget", "--log-to", "--push-gateway",
                                       "--otlp-endpoint")),
    ("Carbon-aware power capping", CAP_OPTIONS),
    ("Green hours", ("--when", "--deadline", "--duration", "--earliest-start", "--interruptible",
                     "--min-chunk", "--max-pieces")),
)  # fmt: skip
"""How ``greenml run --help`` groups its options (one left out shows under "Other options")."""


@click.command(
    cls=SectionedCommand,
    sections=RUN_HELP_SECTIONS,
    context_settings={"allow_interspersed_args": False},
    options_metavar="[OPTIONS] --",
    epilog="Example: greenml run --name bert --tag lr=3e-5 -- python train.py --epochs 3",
)
@click.option("--name", help="A name for the run.")
@click.option(
    "--tag", "tags", multiple=True, metavar="KEY=VALUE", help="Label the run (repeatable)."
)
@json_out_option("Also write the run record as JSON to FILE.")
@renamed("--json", "--json-out", "json_out", metavar="FILE",
         note="--json FILE is now --json-out FILE")  # fmt: skip
@db_option
@gpus_option
@click.option("--no-cpu", is_flag=True, help="Do not measure the CPU and DRAM.")
@click.option(
    "--cpu-scope",
    type=click.Choice(["process", "machine"]),
    default=DEFAULT_CPU_SCOPE,  # the same default as greenml.Run's
    show_default=True,
    help="For the CPU/DRAM model: the command's process tree or the whole machine.",
)
@sample_hz_option(1.0)
@click.option("--node-meter", metavar="SOURCE",
              help="Also read the whole node's power: redfish://USER:PASS@BMC, ipmi://…, "
                   "hwmon:CHIP, shelly://PLUG, tasmota://PLUG, snmp://COMMUNITY@PDU/OID, "
                   "http(s)://…#JSONPATH (default: $GREENML_NODE_METER).")  # fmt: skip
@click.option("--no-hostname", is_flag=True, help="Do not record the host name.")
@click.option("--server", "server_url", metavar="URL",
              help="Also send the run to this team server (default: $GREENML_SERVER or the "
                   "config file; token from $GREENML_TOKEN or the config file).")  # fmt: skip
@click.option("-q", "--quiet", is_flag=True, help="No live status line and no summary.")
@click.option(
    "--kill-on-exit",
    is_flag=True,
    help="If greenml is killed, send COMMAND SIGTERM (Linux); by default it runs on, unmeasured.",
)
@click.option(
    "--job",
    "job_id",
    metavar="ID",
    help="The distributed job this run is one node of (default: found in SLURM_JOB_ID, "
    "TORCHELASTIC_RUN_ID, Ray or a Kubernetes Job; --no-job: none).",
)
@click.option(
    "--node-rank", type=click.IntRange(min=0), metavar="N", help="--job: this node's rank."
)
@click.option(
    "--job-nodes", type=click.IntRange(min=1), metavar="N", help="--job: the job's node count."
)
@click.option("--no-job", is_flag=True, help="Do not look for a job in the environment.")
@click.option(
    "--push-gateway",
    metavar="URL",
    envvar="GREENML_PUSHGATEWAY",
    help="At the end, push the run's figures to this Prometheus Pushgateway.",
)
@click.option(
    "--otlp-endpoint",
    metavar="URL",
    envvar="GREENML_OTLP_ENDPOINT",
    help="At the end, export the run's figures as OTLP metrics (HTTP, …/v1/metrics).",
)
@click.option(
    "--budget",
    metavar="AMOUNT",
    help="A budget: 2kWh, 500Wh, 1.5kg (CO2eq), 10usd. Judged on the projection's lower bound "
    "(greenml.progress) or what was spent.",
)
@click.option(
    "--on-budget",
    type=click.Choice(["warn", "stop"]),
    default="warn",
    show_default=True,
    help="Once the budget is surely passed: warn with the projected total, or stop COMMAND "
    "(SIGTERM: a resilience checkpointer saves and exits 75).",
)
@click.option(
    "--log-to",
    "log_to",
    multiple=True,
    type=click.Choice(["mlflow", "wandb", "tensorboard"]),
    help="Also log energy, power, CO2eq and cost to this tracker (repeatable).",
)
@accounting_options
@when_options
@dirty_cap_options  # --cap-when-dirty (issue 33)
@click.argument(
    "command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="COMMAND [ARGS]"
)
def run(
    name: str | None,
    tags: tuple[str, ...],
    json_out: Path | None,
    db_url: str | None,
    gpus: str | None,
    no_cpu: bool,
    cpu_scope: str,
    sample_hz: float,
    node_meter: str | None,
    no_hostname: bool,
    server_url: str | None,
    quiet: bool,
    kill_on_exit: bool,
    job_id: str | None,
    node_rank: int | None,
    job_nodes: int | None,
    no_job: bool,
    push_gateway: str | None,
    otlp_endpoint: str | None,
    command: tuple[str, ...],
    when: str,
    deadline: str | None,
    duration: str | None,
    earliest_start: str | None,
    interruptible: bool,
    min_chunk: str | None,
    max_pieces: int | None,
    budget: str | None,
    on_budget: str,
    log_to: tuple[str, ...],
    **accounting: Any,
) -> None:
    """Run COMMAND, measure its energy, save the run, and exit with COMMAND's exit code."""
    from greenml.accounting.run_accounting import AccountingOptions
    from greenml.config.settings import setting
    from greenml.run.budget import parse_budget
    from greenml.run.job_identity import JobRequest
    from greenml.run.process import exit_like
    from greenml.run.runner import RunOptions, parse_tags, run_measured

    capping_asked = pop_cap_request(accounting, deadline, duration, parse_gpus(gpus))
    db_url = setting("store.db", db_url)  # option > environment > config file
    accounting["pue"] = setting("run.pue", accounting.get("pue"))
    accounting["price"] = setting("run.price", accounting.get("price"))
    log_to = tuple(setting("run.log_to", list(log_to) or None))
    given_hz = click.get_current_context().get_parameter_source("sample_hz")
    explicit = given_hz is not None and given_hz.name != "DEFAULT"
    sample_hz = setting("run.sample_hz", sample_hz if explicit else None)  # the one check
    if server_url is not None:
        from greenml.run.server_settings import SERVER_ENV, server_settings

        server_settings(server_url)  # a bad URL is an error before the command starts
        os.environ[SERVER_ENV] = server_url  # every writer of this run (and its spool) reads it
    if node_meter is not None:
        from greenml.measure.node.discover import NODE_METER_ENV
        from greenml.measure.node.spec import parse_node_meter

        parse_node_meter(node_meter)  # a bad source is an error before the command starts
        os.environ[NODE_METER_ENV] = node_meter  # read where the run opens its sensors
    options = RunOptions(
        command=command,
        name=name,
        tags=parse_tags(tags),
        db_url=db_url,
        gpus=parse_gpus(gpus),
        cpu=not no_cpu,
        cpu_scope=cpu_scope,
        sample_hz=sample_hz,
        include_hostname=not no_hostname,
        wait_for_store=json_out is not None,
        json_out=json_out,
        accounting=AccountingOptions(**accounting),
        kill_on_exit=kill_on_exit,
        job=JobRequest(
            job_id=job_id, node_rank=node_rank, expected_nodes=job_nodes, detect=not no_job
        ),
        budget=parse_budget(budget, on_budget) if budget is not None else None,
        log_to=log_to,
        push_gateway=push_gateway,
        otlp_endpoint=otlp_endpoint,
    )
    green = None
    planned = (deadline, duration, earliest_start, min_chunk, max_pieces)
    green_asked = any(v is not None for v in planned) and capping_asked is None
    if when == "green" or interruptible or green_asked:
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
    capping = None
    if capping_asked is not None:
        from greenml.optimize.dirty_cap_run import start_dirty_cap

        capping = start_dirty_cap(capping_asked, accounting)
        capping.attach(options)  # the dirty_cap block goes into the run record
    live = None if quiet or not sys.stderr.isatty() else _LiveLine()
    on_tick = live.update if live else None
    ticks = capping.tick(on_tick) if capping else on_tick  # --cap-when-dirty
    result = run_measured(
        options,
        on_tick=green.tick(ticks) if green else ticks,
        on_progress=live.progress if live else None,
    )
    if live:
        live.clear()
    if green is not None:
        green.finish()
    if capping is not None:  # limits restored, whatever happened to the run
        cap_line = cap_summary(capping.finish())
        if not quiet:
            print(cap_line, file=sys.stderr)
    if not quiet:
        _summarize(result)
        if green is not None:
            green.summarize()
    if result.sent is not None and not quiet:  # the upload said in one line
        from greenml.run.session import done_line

        print(done_line(result.record, result.run_id, None, result.sent, result.store_error),
              file=sys.stderr)  # fmt: skip
    if result.store_error:
        _say_where_the_run_is(options, result)
    exit_like(result.exit_code)


def _say_where_the_run_is(options: RunOptions, result: RunResult) -> None:
    """A run the store did not take: where it waits and what stores it, or, when it could
    be written nowhere, the record itself on stderr so that it is not lost."""
    print(f"greenml: error: run not stored: {result.store_error}", file=sys.stderr)
    if result.spooled is not None:
        import shlex

        from greenml.store.url import mask_url

        db = f" --db {shlex.quote(mask_url(options.db_url))}" if options.db_url else ""
        print(f"greenml: the run waits in {result.spooled}; it is stored as soon as the "
              f"database answers, by the next `greenml runs list{db}` (or any command "
              "that reads this store)", file=sys.stderr)  # fmt: skip
    elif result.data is not None:
        record = json_text(result.data, ensure_ascii=False, default=str)
        print(f"greenml: the run could be written nowhere; its record:\n{record}",
              file=sys.stderr)  # fmt: skip


class _LiveLine:
    """A one-line status on the terminal, redrawn in place."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._projection: Projection | None = None

    def progress(self, projection: Projection) -> None:
        self._projection = projection

    def update(self, meter: Meter) -> None:
        from greenml.cli import render  # not needed by a quiet run
        from greenml.run.run_session import RUN_WINDOW

        m = meter.peek_window(RUN_WINDOW)
        elapsed = time.monotonic() - self._t0
        p = self._projection
        like = p.total_energy_j.value if p is not None else None  # one unit for both
        line = render.status_line(
            elapsed, meter.current_power_w(), m.total_j, m.uncertainty_rel, like_j=like
        )
        if p is not None:
            line += progress_text(p)
        line = render.fit_width(line, shutil.get_terminal_size().columns)
        # Cursor back to column 0: the command's own output overwrites the line
        # instead of being appended to it.
        sys.stderr.write(f"\r\x1b[2K{line}\r")
        sys.stderr.flush()

    def clear(self) -> None:
        sys.stderr.write("\r\x1b[2K")
        sys.stderr.flush()


def progress_text(p: Projection) -> str:
    """`` · 35 % · ETA 12:04 · projected 1.20 kWh [1.10–1.30] · 480 g CO2eq`` for the live line."""
    from greenml.cli import render  # not needed by a quiet run

    eta = time.strftime("%H:%M", time.localtime(p.eta_unix_s))
    e = p.total_energy_j
    text = f" · {p.fraction * 100:.0f} % · ETA {eta} · projected {render.energy(e.value)}"
    if e.low is not None and e.high is not None:
        low, high = (render.energy(x, e.value).split(" ")[0] for x in (e.low, e.high))
        text += f" [{low}–{high}]"
    if p.co2_g is not None:
        text += f" · {render.co2(p.co2_g.value / 1000)}"
    return text


def _summarize(result: RunResult) -> None:
    from greenml.cli import render  # not needed by a quiet run

    m = result.measurement
    run_id = result.run_id
    verdict = "completed" if result.exit_code == 0 else f"failed (exit {result.exit_code})"
    title = f"greenml run {run_id} · {verdict} · {render.duration(m.duration_s)}"
    render.print_err(render.measurement_table(m, title))
    blocks = result.accounting
    lines = render.carbon_lines(blocks.get("carbon")) + render.cost_lines(blocks.get("cost"))
    for line in lines + render.footprint_lines(blocks):
        print(f"  {line}", file=sys.stderr)
    if verbose():
        for note in result.notes:
            print(f"  note: {note}", file=sys.stderr)
    elif result.notes:
        count = len(result.notes)
        print(f"  {count} note{'s' if count > 1 else ''} on how the figures were obtained: "
              "greenml -v run … shows them", file=sys.stderr)  # fmt: skip


def verbose() -> bool:
    """Whether ``greenml -v`` was given (the run's notes then follow its summary)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().params.get("verbose"))
