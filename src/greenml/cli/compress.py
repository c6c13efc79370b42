"""``greenml compress SCRIPT_OR_MODULE:FACTORY``: compressed variants, each measured in joules."""

from __future__ import annotations

from pathlib import Path

import click

from greenml.cli import render
from greenml.cli.options import json_option
from greenml.errors import ConfigError
from greenml.store.export import json_text

TECHNIQUE_HELP = "int8, bf16, fp16, prune, sparse24, distill, onnx, onnx-int8"


@click.command()
@click.argument("target", metavar="SCRIPT_OR_MODULE:FACTORY")
@click.option(
    "--technique",
    "techniques",
    metavar="LIST",
    help=f"Comma-separated techniques; default: all of {TECHNIQUE_HELP}.",
)
@click.option(
    "--max-accuracy-drop",
    type=float,
    default=1.0,
    show_default=True,
    metavar="PP",
    help="Accuracy budget of the recommendation, in percentage points below the baseline.",
)
@click.option("--plot", "plot_path", metavar="FILE.svg", help="Write the accuracy-vs-energy plot.")
@click.option("--rounds", type=int, default=3, show_default=True, help="Measurement rounds.")
@click.option(
    "--repeats", type=int, default=20, show_default=True, help="Least calls per variant and round."
)
@click.option(
    "--min-window",
    "min_window_s",
    type=float,
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="Least duration of each variant's measurement window per round.",
)
@click.option(
    "--cpu-scope",
    type=click.Choice(["machine", "process"]),
    default="machine",
    show_default=True,
    help="CPU energy of the whole machine, or of this process tree (CPU model only).",
)
@click.option(
    "--threads",
    type=int,
    metavar="N",
    help="Intra-op threads of torch and ONNX Runtime (default: leave them as they are).",
)
@json_option("Print the result as JSON on stdout.")
def compress(
    target: str,
    techniques: str | None,
    max_accuracy_drop: float,
    plot_path: str | None,
    rounds: int,
    repeats: int,
    min_window_s: float,
    cpu_scope: str,
    threads: int | None,
    as_json: bool,
) -> None:
    """Build compressed variants of a PyTorch model and measure each in joules.

    SCRIPT_OR_MODULE:FACTORY names a function (path/to/script.py:build or
    package.module:build) called without arguments. It returns a dict (or an
    object) with:

    \b
      model           a torch.nn.Module
      evaluate        evaluate(predict) -> accuracy in percent (0-100);
                      predict(*inputs) is called like the model and returns
                      float32 torch outputs
      example_inputs  one batch: a tensor or a tuple of tensors (the model's
                      positional arguments; dim 0 counts the items)
      train_data      optional: (inputs, labels) tensors or an iterable of
                      batches, for distillation and fine-tuning after pruning
      student         optional: the model to distil into

    Each variant gets accuracy, latency p50/p99 per batch, throughput, energy
    per 1,000 inferences (method and uncertainty) and size. A technique that
    does not apply is skipped with the reason; a variant whose evaluation
    fails is marked failed and the others go on. The recommendation is the
    lowest-energy variant within --max-accuracy-drop of the baseline.

    Example: greenml compress examples/compress_digits.py:build --plot pareto.svg
    """
    from greenml.compress import CompressOptions, report, resolve_techniques
    from greenml.compress import compress as run_compress
    from greenml.compress.factory import load_spec
    from greenml.compress.plot import write_pareto_svg
    from greenml.compress.tensors import require_torch

    require_torch()  # before the script: its own `import torch` would be a bare error
    from greenml.measure.meter import Meter

    # Everything checkable is checked before the factory runs (it may train a model).
    options = CompressOptions(rounds=rounds, min_window_s=min_window_s, threads=threads)
    names = resolve_techniques(techniques)
    if not 0 <= max_accuracy_drop < float("inf"):
        raise ConfigError(f"--max-accuracy-drop must be >= 0 pp, not {max_accuracy_drop}")
    if repeats < 1:
        raise ConfigError(f"--repeats must be at least 1, not {repeats}")
    if plot_path is not None:
        folder = Path(plot_path).parent
        if not folder.is_dir():  # say so now, not after minutes of measuring
            raise ConfigError(f"--plot: no such directory: {folder}")
    err = render.console(stderr=True)

    def progress(line: str) -> None:
        err.print(f"[dim]greenml ▸ {line}[/dim]", highlight=False)

    progress(f"loading {target}")
    spec = load_spec(target)
    meter = Meter(sample_hz=10.0, cpu_scope=cpu_scope)
    try:
        result = run_compress(
            spec.model,
            spec.evaluate,
            spec.example_inputs,
            techniques=names,
            train_data=spec.train_data,
            student=spec.student,
            max_accuracy_drop=max_accuracy_drop,
            meter=meter,
            repeats=repeats,
            options=options,
            progress=progress,
        )
    finally:
        meter.close()
    written = write_pareto_svg(result, plot_path) if plot_path else None
    if as_json:
        data = result.to_dict()
        if written is not None:
            data["plot"] = str(written)
        print(json_text(data, ensure_ascii=False, indent=2))
        return
    console = render.console()
    console.print(
        f"greenml compress: {len(result.variants)} variants of {type(spec.model).__name__} "
        f"on {result.device}, batch of {result.batch_size} items",
        highlight=False,
    )
    console.print(report.table(result))
    for line in report.lines(result):
        console.print(f"  {line}", highlight=False, markup=False)
    if written is not None:
        console.print(f"  plot: {written}", highlight=False, markup=False)
