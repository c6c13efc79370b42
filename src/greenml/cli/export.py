"""``greenml export model-card | cyclonedx | boamps``: stored runs as standard documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.cli.options import db_option, output_option

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord

_runs_option = click.option(
    "--runs", "run_ids", multiple=True, metavar="ID", required=True,
    help="A run id or prefix (repeat for several; their figures are summed).",
)  # fmt: skip


@click.group()
def export() -> None:
    """Write stored runs' energy and carbon in a standard format (model card, BOM, BoAmps)."""


@export.command("model-card")
@db_option
@_runs_option
@click.option("--into", "readme", type=click.Path(dir_okay=False, path_type=Path),
              required=True, help="The model's README.md (its other metadata and text are kept).")
@click.option("--training-type", type=click.Choice(["pre-training", "fine-tuning"]),
              default="pre-training", show_default=True)  # fmt: skip
def model_card(
    db_url: str | None, run_ids: tuple[str, ...], readme: Path, training_type: str
) -> None:
    """Hugging Face model card: the co2_eq_emissions block in the README's YAML front matter."""
    from greenml.exports.footprint import footprint
    from greenml.exports.model_card import co2_eq_emissions, write_model_card

    fp = footprint(_records(db_url, run_ids))
    block = co2_eq_emissions(fp, training_type)  # type: ignore[arg-type]
    write_model_card(readme, block)
    click.echo(f"wrote co2_eq_emissions ({block['emissions']:g} g CO2eq) into {readme}")


@export.command("cyclonedx")
@db_option
@click.option("--model", "model_name", required=True, help="The model's name in the BOM.")
@click.option("--model-version", help="The model's version in the BOM.")
@click.option("--training", multiple=True, metavar="ID", help="A run of the training activity.")
@click.option("--fine-tuning", multiple=True, metavar="ID", help="A run of fine-tuning.")
@click.option("--inference", multiple=True, metavar="ID", help="A run of inference.")
@output_option("BOM file (default: stdout).")
def cyclonedx(db_url: str | None, model_name: str, model_version: str | None,
              training: tuple[str, ...], fine_tuning: tuple[str, ...],
              inference: tuple[str, ...], output: Path | None) -> None:  # fmt: skip
    """CycloneDX 1.6 ML-BOM: energy and CO2eq per lifecycle activity of the model."""
    from greenml.exports.cyclonedx import cyclonedx_bom
    from greenml.exports.footprint import footprint

    activities = {}
    for activity, ids in (("training", training), ("fine-tuning", fine_tuning),
                          ("inference", inference)):  # fmt: skip
        if ids:
            activities[activity] = footprint(_records(db_url, ids))
    _write(cyclonedx_bom(model_name, activities, model_version=model_version), output)


@export.command("boamps")
@db_option
@_runs_option
@click.option("--task-stage", required=True,
              help="BoAmps taskStage: training, finetuning, inference …")
@click.option("--task-family", required=True, help="BoAmps taskFamily, e.g. 'text classification'.")
@click.option("--data-type", required=True,
              help="BoAmps dataType of the input: text, image, tabular …")
@click.option("--infra-type", default="other", show_default=True,
              help="publicCloud, privateCloud, onPremise or other.")
@click.option("--algorithm", help="BoAmps algorithmName (e.g. the model's architecture).")
@output_option("Report file (default: stdout).")
def boamps(db_url: str | None, run_ids: tuple[str, ...], task_stage: str, task_family: str,
           data_type: str, infra_type: str, algorithm: str | None,
           output: Path | None) -> None:  # fmt: skip
    """BoAmps report (Boavizta's AI energy format, as CodeCarbon 3.x writes it)."""
    from greenml.exports.boamps import boamps_report
    from greenml.exports.footprint import footprint

    records = _records(db_url, run_ids)
    _write(boamps_report(records, footprint(records), task_stage=task_stage,
                         task_family=task_family, data_type=data_type,
                         infra_type=infra_type, algorithm=algorithm), output)  # fmt: skip


def _records(db_url: str | None, run_ids: tuple[str, ...]) -> list[RunRecord]:
    from greenml.cli.runs import open_ingested

    with open_ingested(db_url) as store:
        return [store.get_run_record(i) for i in run_ids]


def _write(document: dict[str, Any], output: Path | None) -> None:
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        click.echo(text, nl=False)
        return
    from greenml.errors import ConfigError

    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc}") from None
    click.echo(f"wrote {output}", err=True)
