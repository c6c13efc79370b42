"""``greenml optimize sweep TRAIN.PY:make_step``: a training step under a grid of software knobs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import json_option, json_out_option, renamed
from greenml.errors import ConfigError
from greenml.quantities import energy
from greenml.store.export import json_text

_EPILOG = """\b
Examples:
  greenml optimize sweep examples/sweep_digits.py:make_step --batch-size 32,128 \\
    --precision fp32,bf16
  greenml optimize sweep mypkg.train:make_step --device cuda --compile on,off --workers 0,4 \\
    --eta 0.5

\b
make_step(config) receives a SweepConfig (batch_size, workers, device, precision,
compile) and returns TrainStep(step, model) from greenml.optimize.sweep.run: step() runs
one training step and returns the samples it processed, or (samples, loss).
greenml applies the precision (autocast of the model's forward; tf32 on CUDA) and
torch.compile to the model. Each configuration is warmed up, then measured for at
least --steps steps and at least --seconds seconds.
"""
_BOOLS = {"on": True, "off": False, "true": True, "false": False, "yes": True, "no": False}
_DEFAULT_PRECISIONS = {"cpu": "fp32,bf16", "cuda": "fp32,tf32,bf16,fp16"}


def _items(text: str, option: str) -> list[str]:
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        raise ConfigError(f"{option} is empty: give at least one value")
    return items


def _ints(text: str, option: str, minimum: int) -> list[int]:
    values = []
    for item in _items(text, option):
        try:
            value = int(item)
        except ValueError:
            raise ConfigError(f"{option}: {item!r} is not a whole number") from None
        if value < minimum:
            raise ConfigError(f"{option}: {value} is below {minimum}")
        values.append(value)
    return values


def _switches(text: str) -> list[bool]:
    out = []
    for item in _items(text, "--compile"):
        if item.lower() not in _BOOLS:
            raise ConfigError(f"--compile takes on and/or off, not {item!r}")
        out.append(_BOOLS[item.lower()])
    return out


def _etas(text: str) -> list[float]:
    from greenml.optimize.objective import check_eta

    out = []
    for item in _items(text, "--eta"):
        try:
            out.append(check_eta(float(item)))
        except ValueError:
            raise ConfigError(f"--eta: {item!r} is not a number between 0 and 1") from None
    return out


def _share(text: str) -> float:
    from greenml.cli.options import parse_share

    return parse_share(text, "--loss-tolerance")


def _device(choice: str) -> str:
    if choice != "auto":
        return choice
    try:
        import torch
    except ImportError:
        raise ConfigError("greenml optimize sweep needs PyTorch: pip install torch") from None
    return "cuda" if torch.cuda.is_available() else "cpu"


@click.command(epilog=_EPILOG)
@click.argument("target", metavar="FILE_OR_MODULE:FACTORY")
@click.option("--precision", help="Precisions: fp32,tf32,bf16,fp16 [cpu: fp32,bf16; cuda: all].")
@click.option("--batch-size", default="32", show_default=True, help="Batch sizes, e.g. 32,64,128.")
@click.option(
    "--compile", "compile_", default="off", show_default=True, help="torch.compile: on,off."
)
@click.option("--workers", default="0", show_default=True, help="Data-loader workers, e.g. 0,2.")
@click.option("--warmup", default=3, show_default=True, help="Unmeasured steps per configuration.")
@click.option("--steps", default=20, show_default=True, help="Measure at least this many steps...")
@click.option(
    "--seconds",
    default=2.0,
    show_default=True,
    help="...and at least this long (0: exactly --steps steps).",
)
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda"]),
    default="auto",
    show_default=True,
    help="auto: cuda when torch sees a GPU.",
)
@click.option(
    "--eta", default="0,0.25,0.5,0.75,1", show_default=True, help="η values to advise for."
)
@click.option("--max-power-w", type=float, help="P_max of the cost [GPU max limit / CPU TDP].")
@click.option("--loss-tolerance", default="5%", show_default=True, help="Flag a loss change above.")
@click.option("--seed", default=0, show_default=True, help="torch.manual_seed per configuration.")
@json_option("Print the results as JSON on stdout.")
@json_out_option("Also write the results as JSON to FILE.")
@renamed(("-o", "--output"), "--json-out", "json_out", metavar="FILE",
         note="-o/--output FILE is now --json-out FILE")  # fmt: skip
def sweep(
    target: str,
    precision: str | None,
    batch_size: str,
    compile_: str,
    workers: str,
    warmup: int,
    steps: int,
    seconds: float,
    device: str,
    eta: str,
    max_power_w: float | None,
    loss_tolerance: str,
    seed: int,
    as_json: bool,
    json_out: Path | None,
) -> None:
    """Measure J/sample and samples/s of a training step per precision, batch, compile, workers."""
    from greenml.optimize.sweep.run import SweepGrid
    from greenml.optimize.sweep.run import sweep as run_sweep
    from greenml.optimize.sweep.target import load_factory

    etas = _etas(eta)
    tolerance = _share(loss_tolerance)
    device = _device(device)
    precisions = _items(precision or _DEFAULT_PRECISIONS[device], "--precision")
    grid = SweepGrid(
        precisions,
        _ints(batch_size, "--batch-size", 1),
        _switches(compile_),
        _ints(workers, "--workers", 0),
    )
    factory = load_factory(target)
    result = run_sweep(
        factory,
        grid,
        warmup_steps=warmup,
        measure_steps=steps,
        measure_s=seconds,
        device=device,
        max_power_w=max_power_w,
        seed=seed,
        loss_tolerance_rel=tolerance,
        on_start=_progress_start,
        on_result=_progress_end,
    )
    data = result.to_dict(etas)
    if json_out is not None:
        from greenml.store.protected_files import refuse_overwrite

        refuse_overwrite(json_out, "--json-out")
        json_out.write_text(json_text(data, ensure_ascii=False, indent=2) + "\n")
    if as_json:
        print(json_text(data, ensure_ascii=False, indent=2))
        return
    _render(result, etas, json_out)


def _progress_start(index: int, total: int, config: Any) -> None:
    render.console(stderr=True).print(f"[{index}/{total}] {config.label} …", highlight=False)


def _progress_end(index: int, total: int, r: Any) -> None:
    if r.ok:
        per_sample = _per_sample(r.energy_per_sample_j)
        text = f"      {per_sample}/sample, {r.samples_per_s:,.0f} samples/s"
    else:
        text = f"      {r.status}: {r.reason}"
    render.console(stderr=True).print(text, highlight=False, markup=False)


def _per_sample(joules: float) -> str:
    """Joules per sample with an SI prefix (``1.23 mJ``)."""
    if not math.isfinite(joules):
        return "-"
    return energy(joules)


def _render(result: Any, etas: list[float], output: Path | None) -> None:
    console = render.console()
    console.print(
        f"greenml optimize sweep on {result.device}: energy per sample of the measured steps, "
        "every measured component (CPU, DRAM, GPU) included",
        highlight=False,
    )
    console.print(_configs_table(result))
    for line in _footnotes(result):
        console.print(line, highlight=False, markup=False)
    spreads = [r.throughput_spread_rel for r in result.results if r.ok]
    if any(s is not None for s in spreads):
        console.print(
            "  samples/s ±: spread of the throughput over the quarters of the measured window; "
            "a large one means the machine was shared or the window short (raise --seconds)",
            highlight=False,
        )
    if any(r.ok and r.config.precision != "fp32" for r in result.results):
        console.print(
            "  loss vs fp32: change of the mean loss against the fp32 run of the same batch, "
            "compile and workers, over the same steps (same seed and batches); flagged above "
            f"{result.loss_tolerance_rel:.0%}",
            highlight=False,
        )
    console.print(
        f"P_max {result.max_power_w:.0f} W: {result.max_power_source}",
        highlight=False,
        markup=False,
    )
    picks = result.recommendations(etas)
    if picks:
        console.print(_picks_table(result, picks))
    else:
        console.print("no recommendation: no configuration succeeded", highlight=False)
    for warning in result.warnings:
        line = f"  warning: {warning} (left out of the picks)"
        console.print(line, highlight=False, markup=False)
    for note in result.notes:
        console.print(f"  note: {note}", highlight=False, markup=False)
    if output is not None:
        console.print(f"results written to {output}", highlight=False, markup=False)


def _configs_table(result: Any) -> Any:
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False)
    for header in ("precision", "batch", "compile", "workers", "status"):
        table.add_column(header)
    for header in ("J/sample", "±", "samples/s", "±", "power", "steps", "loss vs fp32"):
        table.add_column(header, justify="right")
    table.add_column("method")
    checks = result.loss_checks
    for r in result.results:
        c = r.config
        head = (c.precision, str(c.batch_size), "on" if c.compile else "off", str(c.workers))
        if not r.ok:
            table.add_row(*head, r.status, *["-"] * 8)
            continue
        table.add_row(
            *head,
            r.status,
            _per_sample(r.energy_per_sample_j),
            render.percent(r.uncertainty_rel),
            f"{r.samples_per_s:,.0f}",
            render.percent(r.throughput_spread_rel) if r.throughput_spread_rel is not None else "-",
            f"{r.power_w:.1f} W",
            str(r.steps),
            _vs_fp32(r, checks.get(c.label)),
            r.method,
        )
    return table


def _vs_fp32(r: Any, check: Any) -> str:
    """The loss check in a cell: ``0.3 %``, ``CHANGED 12 %``, ``unchecked`` or ``ref``."""
    if check is None:
        return "ref" if r.losses else "-"
    if check.change_rel is None:
        return check.status if check.status != "changed" else "CHANGED"
    change = check.change_rel
    text = "<0.1 %" if change < 0.001 else f"{change:.1%}".replace("%", " %")
    return f"CHANGED {text}" if check.status == "changed" else text


def _footnotes(result: Any) -> list[str]:
    """Why configurations failed or were skipped, and their notes."""
    lines = []
    for r in result.results:
        if not r.ok:
            lines.append(f"  {r.config.label} {r.status}: {r.reason}")
        lines.extend(f"  {r.config.label}: {note}" for note in r.notes)
    return lines


def _picks_table(result: Any, picks: list[Any]) -> Any:
    from rich.table import Table

    baseline = next((r for r in result.results if r.ok), None)
    title = "recommended: least η·E + (1−η)·P_max·T per sample"
    if baseline is not None:
        title += f"; change vs the first configuration ({baseline.config.label})"
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for header in ("η", "configuration", "J/sample", "samples/s", "energy", "speed"):
        table.add_column(header, justify="left" if header == "configuration" else "right")
    table.add_column("accuracy", overflow="fold", max_width=56)
    for p in picks:
        r = p.result
        energy = speed = "-"
        if baseline is not None:
            change = r.energy_per_sample_j / baseline.energy_per_sample_j - 1
            energy = f"{change:+.0%}".replace("%", " %")
            speed = f"×{r.samples_per_s / baseline.samples_per_s:.2f}"
        table.add_row(
            f"{p.eta:g}",
            r.config.label,
            _per_sample(r.energy_per_sample_j),
            f"{r.samples_per_s:,.0f}",
            energy,
            speed,
            p.caveat or ("reference precision" if r.config.precision == "fp32" else "-"),
        )
    return table
