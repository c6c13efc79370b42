"""Options shared by several commands: one definition each, so one spelling means one thing.

The vocabulary (checked by tests/cli/test_vocabulary.py):

- ``--json`` is a flag: print JSON on stdout. ``--json-out FILE`` writes the JSON
  document to a file; ``-o/--output FILE`` is the file the command's output goes to.
- ``--zone``, ``--region``, ``--country``, ``--ci``, ``--pue``, ``--price``,
  ``--instance``, ``--intensity-trace``, ``--intensity-provider`` say where and at
  what price a job runs; ``--db`` is the run store; ``--gpus`` picks GPUs of this
  machine by index; ``--sample-hz`` is a sampling rate.
- An old spelling stays as a hidden :class:`RenamedOption` that still works and
  says the new one on stderr.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from greenml.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

# greenml.accounting.location.PROVIDERS (not imported: `greenml run` stays light; a test
# checks they agree).
INTENSITY_PROVIDERS = ("static", "electricitymaps", "watttime", "ukci")


def _check_db(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Refuse ``--db /dev/null`` (a folder, a device) before anything runs: one line, exit 2."""
    if value:
        from greenml.store.url import refuse_special_file, resolve_url, sqlite_path

        path = sqlite_path(resolve_url(value))
        if path is not None:
            refuse_special_file(path)
    return value


db_option = click.option(
    "--db",
    "db_url",
    metavar="URL",
    callback=_check_db,
    help="Run store: a path, sqlite:///… or postgresql://… "
    "(default: $GREENML_DB or the per-user SQLite file).",
)

server_read_option = click.option(
    "--server",
    "server_url",
    metavar="URL",
    help="Read from this team server (default: $GREENML_SERVER or the config file's "
    "[server] url; token from $GREENML_TOKEN or the config file); --db reads a store instead.",
)


class RenamedOption(click.Option):
    """A hidden old spelling of an option: it still works, and says the new one on stderr.

    Its value is handed to the new option (``target``, the parameter's name) before
    that one is processed, so the new option's type, validation and ``required``
    apply to it. ``convert`` maps the raw value first (``--interval S`` → ``1/S`` Hz).
    """

    def __init__(
        self,
        param_decls: list[str],
        *,
        new: str,
        target: str,
        note: str | None = None,
        convert: Callable[[Any], Any] | None = None,
        **attrs: Any,
    ) -> None:
        super().__init__(param_decls, hidden=True, expose_value=False, **attrs)
        self.new = new
        self.target = target
        self.note = note or f"{'/'.join(self.opts)} is now {new}"
        self.convert = convert

    def handle_parse_result(
        self, ctx: click.Context, opts: Any, args: list[str]
    ) -> tuple[Any, list[str]]:
        if self.name in opts:
            if self.target in opts:
                old = self.opts[0]
                raise click.UsageError(f"{old} is the old spelling of {self.new}: give one", ctx)
            raw = opts.pop(self.name)
            if not ctx.resilient_parsing:
                click.echo(f"greenml: {self.note}", err=True)
            opts[self.target] = self._convert(raw, ctx)
        return super().handle_parse_result(ctx, opts, args)

    def _convert(self, raw: Any, ctx: click.Context) -> Any:
        if self.convert is None:
            return raw
        try:
            return self.convert(raw)
        except (ValueError, ConfigError) as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=self) from None


def renamed(
    old: str | tuple[str, ...],
    new: str,
    target: str,
    *,
    note: str | None = None,
    convert: Callable[[Any], Any] | None = None,
    **attrs: Any,
) -> Callable[[F], F]:
    """A hidden :class:`RenamedOption` ``old`` for the option ``new`` (parameter ``target``)."""
    spellings = (old,) if isinstance(old, str) else old
    name = "renamed_" + max(spellings, key=len).lstrip("-").replace("-", "_")
    return click.option(
        *spellings, name, cls=RenamedOption, new=new, target=target, note=note, convert=convert,
        **attrs,
    )  # fmt: skip


# --- output -----------------------------------------------------------------------------


def json_option(help: str = "Print the result as JSON on stdout.") -> Callable[[F], F]:
    """``--json``: a flag, JSON on stdout (parameter ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def _writable_output(ctx: click.Context, param: click.Parameter, value: Path | None) -> Any:
    """Refuse an output file that is a run store, its SQLite side files or a ledger."""
    if value is not None:
        from greenml.store.protected_files import refuse_overwrite

        refuse_overwrite(value, param.opts[-1] if param.opts else "output")
    return value


def json_out_option(help: str = "Also write the result as JSON to FILE.") -> Callable[[F], F]:
    """``--json-out FILE``: the JSON document written to a file (parameter ``json_out``)."""
    return click.option(
        "--json-out",
        "json_out",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        help=help,
        callback=_writable_output,
    )


def output_option(help: str = "File (default: stdout).") -> Callable[[F], F]:
    """``-o/--output FILE``: where the command's output goes (parameter ``output``)."""
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        help=help,
        callback=_writable_output,
    )


# --- location, intensity and price ------------------------------------------------------


def _non_negative(ctx: click.Context, param: click.Parameter, value: float | None) -> Any:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise click.BadParameter(f"must be a finite number >= 0, not {value}", ctx, param)
    return value


def zone_option(*, candidates: bool = False) -> Callable[[F], F]:
    """``--zone``: a grid zone; ``candidates``: repeatable, parameter ``zones``."""
    if candidates:
        return click.option(
            "--zone", "zones", multiple=True, metavar="ZONE",
            help="A candidate grid zone, e.g. DE, US-CAL-CISO (repeatable).",
        )  # fmt: skip
    return click.option(
        "--zone", metavar="ZONE", help="Grid zone, e.g. DE, US-CAL-CISO (for carbon intensity)."
    )


def region_option(*, candidates: bool = False, help: str | None = None) -> Callable[[F], F]:
    """``--region``: a cloud region; ``candidates``: repeatable, parameter ``regions``."""
    if candidates:
        return click.option(
            "--region", "regions", multiple=True, metavar="REGION",
            help=help or "A candidate cloud region, e.g. aws:eu-north-1 (repeatable).",
        )  # fmt: skip
    return click.option(
        "--region",
        metavar="REGION",
        help="Cloud region, e.g. us-central1, aws:eu-west-1 (for carbon intensity).",
    )


country_option = click.option(
    "--country",
    metavar="COUNTRY",
    help="Country (ISO code or English name), for a yearly average intensity.",
)
ci_option = click.option(
    "--ci",
    type=float,
    metavar="G_PER_KWH",
    callback=_non_negative,
    help="Fixed grid carbon intensity in gCO2eq/kWh.",
)
pue_option = click.option(
    "--pue",
    metavar="NUMBER|PROVIDER",
    help="Power usage effectiveness: a number, or gcp, aws, azure, datacenter, personal.",
)


def pue_number(text: str | None) -> float | None:
    """A ``--pue`` value as a number: the number given, or the named provider's PUE."""
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        from greenml.accounting.pue import pue_for

        return pue_for(provider=text).value


price_option = click.option(
    "--price",
    type=float,
    metavar="USD_PER_KWH",
    callback=_non_negative,
    help="Electricity price in USD/kWh.",
)
instance_option = click.option(
    "--instance",
    metavar="TYPE",
    help="Cloud instance type (e.g. g5.xlarge), for its hourly list price.",
)


class TracePath(click.Path):
    """An existing CSV file, or the name of a trace packaged with greenml (its samples)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import os

        from greenml.accounting.traces import SAMPLES

        if isinstance(value, str) and value in SAMPLES and not os.path.exists(value):
            return value
        return super().convert(value, param, ctx)


def intensity_trace_option(*, required: bool = False) -> Callable[[F], F]:
    """``--intensity-trace CSV``: an hourly intensity file (parameter ``intensity_trace``)."""
    return click.option(
        "--intensity-trace",
        "intensity_trace",
        required=required,
        type=TracePath(exists=True, dir_okay=False),
        metavar="CSV",
        help="Hourly carbon intensity: an Electricity Maps export or time,g/kWh rows "
        "(DE-LU_2023_sample.csv, GB_2023_sample.csv: six weeks shipped with greenml).",
    )


intensity_provider_option = click.option(
    "--intensity-provider",
    type=click.Choice(INTENSITY_PROVIDERS, case_sensitive=False),
    metavar="NAME",
    help="Who answers for --zone: static (a yearly mean; the default), or a live source "
    "with forecasts: electricitymaps, watttime, ukci (credentials from the environment).",
)
trace_renamed = renamed("--trace", "--intensity-trace", "intensity_trace", metavar="CSV")


_FOOTPRINT_OPTIONS = (
    click.option(
        "--supplier-ci",
        type=float,
        metavar="G_PER_KWH",
        help="Market-based: your electricity supplier's emission factor in gCO2eq/kWh.",
    ),
    click.option(
        "--certificates",
        multiple=True,
        metavar="SHARE[@YEAR][:KIND]",
        help="Market-based: certificates or a PPA covering a share or kWh of the energy, "
        "e.g. 40%@2025:GO or 1200kWh@2025:PPA (repeatable).",
    ),
    click.option(
        "--market",
        "market_file",
        type=click.Path(exists=True, dir_okay=False),
        metavar="TOML",
        help="Market-based declarations ([market] table: supplier, certificates, offsets).",
    ),
    click.option(
        "--wue",
        metavar="L_PER_KWH|PROVIDER",
        help="On-site water usage effectiveness: L/kWh, or aws, azure (published fleet "
        "figures); default: 1.8 L/kWh (stated).",
    ),
)


def footprint_options(command: F) -> F:
    """``--supplier-ci``, ``--certificates``, ``--market``, ``--wue``: market carbon and water."""
    for option in reversed(_FOOTPRINT_OPTIONS):
        command = option(command)
    return command


def location_options(command: F) -> F:
    """``--zone``, ``--region``, ``--country`` and ``--ci``: where the intensity comes from."""
    for option in reversed((zone_option(), region_option(), country_option, ci_option)):
        command = option(command)
    return command


# --- this machine -----------------------------------------------------------------------

gpus_option = click.option(
    "--gpus",
    metavar="LIST",
    help="GPUs of this machine by CUDA index, e.g. 0,1, or none (default: all visible).",
)


def parse_gpus(text: str | None) -> list[int] | None:
    """``--gpus``: ``0,1`` → [0, 1]; ``none`` → []; not given → None (all visible)."""
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


def gpus_to_act_on(text: str | None) -> list[int] | None:
    """``--gpus`` of a command that acts on GPUs: None is all visible; ``none`` is refused."""
    indices = parse_gpus(text)
    if indices == []:
        raise ConfigError("--gpus none leaves no GPU to act on: give indices like 0,1")
    return indices


gpu_renamed = renamed(
    "--gpu", "--gpus", "gpus", multiple=True, metavar="INDEX",
    note="--gpu INDEX is now --gpus LIST (e.g. --gpus 0,1)", convert=",".join,
)  # fmt: skip


def _check_sample_hz(ctx: click.Context, param: click.Parameter, value: float) -> float:
    from greenml.errors import ConfigError
    from greenml.quantities import bounds

    try:
        return bounds.sample_hz(value, "--sample-hz")
    except ConfigError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def sample_hz_option(default: float, help: str = "Power samples per second.") -> Callable[[F], F]:
    """``--sample-hz HZ``: a sampling rate in (0.001, 100] Hz."""
    return click.option(
        "--sample-hz",
        type=float,
        default=default,
        show_default=True,
        metavar="HZ",
        callback=_check_sample_hz,
        help=help,
    )


def _interval_to_hz(raw: str) -> str:
    try:
        interval_s = float(raw)
    except ValueError:
        interval_s = math.nan
    if not (interval_s > 0 and math.isfinite(interval_s)):
        raise ValueError(f"must be a number of seconds > 0, not {raw!r}")
    return repr(1.0 / interval_s)


interval_renamed = renamed(
    "--interval", "--sample-hz", "sample_hz", metavar="S",
    note="--interval S is now --sample-hz HZ (1/S)", convert=_interval_to_hz,
)  # fmt: skip


def parse_share(text: str, what: str, *, at_most: float | None = 1.0) -> float:
    """``15%``, ``15`` or ``0.15`` → 0.15 (a bare number above 1 is a percentage).

    Raises:
        ConfigError: Not a number, negative, or above ``at_most`` (None: no bound).
    """
    raw = text.strip()
    try:
        value = float(raw.rstrip("%"))
    except ValueError:
        raise ConfigError(f"{what} must be a percentage like 15%, not {text!r}") from None
    if raw.endswith("%") or value > 1:
        value /= 100.0
    if not value >= 0 or (at_most is not None and value > at_most):
        bound = f" and {at_most:.0%}" if at_most is not None else ""
        raise ConfigError(f"{what} must be between 0%{bound}, not {text!r}")
    return value


def signed_share(text: str, flag: str = "--price-escalation") -> float:
    """``3%``, ``-2%`` or ``0.5`` (a bare number is percent) → a signed fraction.

    Raises:
        ConfigError: Not a percentage.
    """
    raw = text.strip()
    value = parse_share(raw.lstrip("-+"), flag)
    return -value if raw.startswith("-") else value


def yearly_rate(text: str, flag: str = "--price-escalation") -> float:
    """:func:`signed_share`, held to what a yearly price change can be.

    Raises:
        ConfigError: Not a percentage, or outside -50 % … +100 % a year.
    """
    from greenml.accounting.escalation import check_rate

    return check_rate(signed_share(text, flag))
