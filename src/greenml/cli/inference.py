"""``greenml inference``: batch-size energy curves and shared cache savings for inference.

(``greenml serve`` of earlier releases: ``serve`` and ``server`` were two words for two
things; ``greenml server`` is the team server.)
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import json_option, price_option, sample_hz_option
from greenml.errors import ConfigError
from greenml.measure.meter import Meter
from greenml.store.export import json_text


def make_meter(sample_hz: float) -> Meter:
    """The Meter the command measures with (tests replace this with fake sensors)."""
    return Meter(sample_hz=sample_hz)


@click.group()
def inference() -> None:
    """Energy of inference serving: batch-size curves, cache savings."""


@inference.command("batch-curve")
@click.argument("target", metavar="SCRIPT:FACTORY")
@click.option(
    "--batch-sizes", default="1,2,4,8,16,32", show_default=True, help="Comma-separated sizes."
)
@click.option("--latency-budget-ms", type=float, help="Recommend a setting that fits this p99.")
@click.option("--arrival-rate", type=float, metavar="PER_S", help="Requests per second expected.")
@click.option("--repeats", type=int, default=10, show_default=True, help="Fewest runs per size.")
@click.option("--min-time", type=float, default=1.0, show_default=True, metavar="S",
              help="Fewest seconds per size.")  # fmt: skip
@sample_hz_option(10.0)
@json_option("Print the curve as JSON on stdout.")
def batch_curve(
    target: str,
    batch_sizes: str,
    latency_budget_ms: float | None,
    arrival_rate: float | None,
    repeats: int,
    min_time: float,
    sample_hz: float,
    as_json: bool,
) -> None:
    """Measure energy per item against batch size for FACTORY() → run(batch_size).

    SCRIPT is a .py file or a module; FACTORY builds the model and returns a
    function that runs one batch of the given size (and waits for the device).
    """
    from greenml.serve.batch_curve import batch_curve as measure

    sizes = parse_sizes(batch_sizes)
    if latency_budget_ms is not None and not latency_budget_ms > 0:
        raise ConfigError(f"--latency-budget-ms must be > 0, got {latency_budget_ms}")
    factory = load_factory(target)
    try:
        run = factory()
    except Exception as exc:  # the user's code: one line, no traceback
        raise ConfigError(f"{target}() raised {type(exc).__name__}: {exc}") from None
    if not callable(run):
        raise ConfigError(f"{target} returned {type(run).__name__}, not a function run(batch_size)")
    meter = make_meter(sample_hz)
    try:
        curve = measure(
            run,
            sizes,
            meter,
            latency_budget_s=None if latency_budget_ms is None else latency_budget_ms / 1000,
            arrival_rate_per_s=arrival_rate,
            repeats=repeats,
            min_time_s=min_time,
        )
    finally:
        meter.close()
    if as_json:
        print(json_text(curve.to_dict(), indent=2))
        return
    _render_curve(curve, latency_budget_ms)


def parse_sizes(text: str) -> list[int]:
    """``1,2,4`` → [1, 2, 4]; ConfigError for anything but integers >= 1."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(f"--batch-sizes must be integers like 1,2,4,8, not {text!r}") from None
    if not sizes or min(sizes) < 1:
        raise ConfigError(f"--batch-sizes must be integers >= 1, not {text!r}")
    return sizes


def load_factory(target: str) -> Any:
    """The callable named by ``path/to/script.py:factory`` or ``package.module:factory``."""
    source, sep, name = target.rpartition(":")
    if not sep or not source or not name:
        raise ConfigError(f"expected SCRIPT:FACTORY (e.g. model.py:make_run), got {target!r}")
    path = Path(source)
    if source.endswith(".py") or path.exists():
        if not path.is_file():
            raise ConfigError(f"no such script: {source}")
        spec = importlib.util.spec_from_file_location(f"greenml_user_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load {source} as Python")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.resolve().parent))
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ConfigError(f"importing {source} raised {type(exc).__name__}: {exc}") from None
        finally:
            sys.path.pop(0)
    else:
        try:
            module = importlib.import_module(source)
        except ImportError as exc:
            raise ConfigError(f"cannot import {source}: {exc}") from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ConfigError(f"{source} has no function {name!r}")
    return factory


def _render_curve(curve: Any, budget_ms: float | None) -> None:
    from rich.table import Table

    console = render.console()
    points = curve.points
    base = points[0].energy_j_per_item if points else 0.0
    table = Table(show_edge=False, pad_edge=False)
    headers = ("batch", "runs", "p50", "p99", "J/batch", "J/item", "uncertainty", "J/item vs 1st")
    for header in headers:
        table.add_column(header, justify="right")
    if budget_ms is not None:
        table.add_column("fits", justify="center")
    for p in points:
        saving = 1 - p.energy_j_per_item / base if base > 0 else 0.0
        row = [
            str(p.batch_size),
            str(p.runs),
            f"{p.latency_p50_s * 1000:.1f} ms",
            f"{p.latency_p99_s * 1000:.1f} ms",
            f"{p.energy_j_per_batch:.3g}",
            f"{p.energy_j_per_item:.3g}",
            render.percent(p.uncertainty_rel),
            f"{-saving * 100:+.0f} %",
        ]
        if budget_ms is not None:
            row.append("yes" if p.latency_p99_s * 1000 <= budget_ms else "no")
        table.add_row(*row)
    console.print(table)
    method = points[0].method if points else "-"
    console.print(f"energy: {method} (one Meter window per size, divided by its runs)")
    rec = curve.recommendation
    if rec is not None:
        gain = (
            f"{rec.saving_rel * 100:.0f} % less energy per item than batch {points[0].batch_size}"
            if rec.max_batch != points[0].batch_size
            else "no larger batch that fits uses less energy per item"
        )
        console.print(
            f"recommended: max_batch={rec.max_batch}, max_wait_ms={rec.max_wait_ms:.1f} — "
            f"{rec.energy_j_per_item:.3g} J/item, {gain} ({rec.reason})",
            markup=False,
        )
    for note in curve.notes:
        console.print(f"note: {note}", markup=False)


@inference.command("cache-stats")
@click.option("--redis", "redis_url", required=True, metavar="URL", help="redis://host:port/db")
@click.option("--namespace", required=True, help="The cache's key prefix.")
@price_option
@json_option("Print the statistics as JSON on stdout.")
def cache_stats(redis_url: str, namespace: str, price: float | None, as_json: bool) -> None:
    """Hits, hit rate and energy saved by a Redis-backed cache (every process's)."""
    from greenml.serve.cache.redis import RedisBackend
    from greenml.serve.cache.stats import CacheStats

    backend = RedisBackend(redis_url, namespace=namespace, max_entries=None)
    try:
        stats = CacheStats.from_counters(backend.read_stats(), price)
        entries = len(backend)
    finally:
        backend.close()
    if as_json:
        print(json_text({"namespace": namespace, "entries": entries, **stats.to_dict()}, indent=2))
        return
    console = render.console()
    rate = stats.hit_rate
    console.print(
        f"{namespace}: {entries} entries, {stats.hits} hits / {stats.lookups} lookups"
        + (f" ({rate * 100:.1f} % hit rate)" if rate is not None else ""),
        markup=False,
    )
    saved = stats.energy_saved_j
    if saved is None:
        console.print("energy saved: unknown — no miss's energy was measured", markup=False)
        return
    rel = stats.energy_saved_uncertainty_rel
    console.print(
        f"energy saved: {render.energy(saved)} ({render.percent(rel or 0.0)}) — "
        f"{stats.hits} hits × {stats.mean_miss_energy_j:.3g} J, the mean of "
        f"{stats.measured_misses} measured misses",
        markup=False,
    )
    if stats.usd_saved is not None:
        console.print(f"cost saved: {render.usd(stats.usd_saved)} at {price:g} USD/kWh")
