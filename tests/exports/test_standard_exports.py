"""`greenml export`: each document validated by the format's own library or published schema.

* model card: huggingface_hub's ModelCard reads the README back (metadata and body);
* CycloneDX: cyclonedx-python-lib's strict JSON validator for spec 1.6;
* BoAmps: Boavizta's published draft-04 schemas (copied in boamps_schema/, see SOURCE.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from greenml.cli import main
from tests.exports.stored import greenml_record, store_records

Invoke = Callable[..., tuple[int, str, str]]
SCHEMAS = Path(__file__).with_name("boamps_schema")
KWH = 3.6e6


@pytest.fixture
def db(tmp_path: Path) -> str:
    return store_records(
        tmp_path / "runs.db",
        greenml_record("train1", 7.2e6, gpu_j=6.0e6),  # 2 kWh at 400 g/kWh: 800 g
        greenml_record("train2", 3.6e6, gpu_j=3.0e6),  # 1 kWh: 400 g
        greenml_record("serve1", 0.36e6, gpu_j=0.3e6),  # 0.1 kWh: 40 g
        greenml_record("nocarbon", 1e6, ci=None),
    )


@pytest.fixture
def invoke(capsys: pytest.CaptureFixture[str]) -> Invoke:
    """``greenml ARGS`` in-process: (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_model_card_block_written_into_front_matter_and_read_by_huggingface_hub(
    db: str, tmp_path: Path, invoke: Invoke
) -> None:
    from huggingface_hub import ModelCard

    readme = tmp_path / "README.md"
    readme.write_text("---\nlicense: apache-2.0\ntags:\n- text-classification\n---\n\n"
                      "# My model\n\nTrained on digits.\n", encoding="utf-8")  # fmt: skip
    code, _out, err = invoke("export", "model-card", "--db", db, "--runs", "train1",
                            "--runs", "train2", "--into", str(readme),
                            "--training-type", "fine-tuning")  # fmt: skip
    assert code == 0, err
    card = ModelCard.load(readme)
    assert card.data.license == "apache-2.0" and card.data.tags == ["text-classification"]
    assert "# My model" in card.text and "Trained on digits." in card.text
    co2 = card.data.co2_eq_emissions
    assert co2["emissions"] == pytest.approx(1200.0)  # grams, as the Hub documents
    assert co2["training_type"] == "fine-tuning"
    assert co2["geographical_location"] == "DE"
    assert "4 x NVIDIA H100 80GB HBM3" in co2["hardware_used"]
    assert "greenml" in co2["source"] and "counter" in co2["source"]
    assert "train1" in co2["source"] and "Ember" in co2["source"]
    # written again: replaced, not duplicated; the rest still there
    assert invoke("export", "model-card", "--db", db, "--runs", "serve1",
                  "--into", str(readme))[0] == 0  # fmt: skip
    again = ModelCard.load(readme)
    assert again.data.co2_eq_emissions["emissions"] == pytest.approx(40.0)
    assert again.data.license == "apache-2.0" and readme.read_text().count("co2_eq_emissions") == 1


def test_model_card_refuses_a_run_without_carbon_and_a_broken_front_matter(
    db: str, tmp_path: Path, invoke: Invoke
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("---\nlicense: mit\n# never closed\n", encoding="utf-8")
    code, _, err = invoke("export", "model-card", "--db", db, "--runs", "train1",
                          "--into", str(readme))  # fmt: skip
    assert code == 2 and "never closed" in err and len(err.strip().splitlines()) == 1
    assert readme.read_text() == "---\nlicense: mit\n# never closed\n"  # untouched
    code, _, err = invoke("export", "model-card", "--db", db, "--runs", "nocarbon",
                          "--into", str(tmp_path / "new.md"))  # fmt: skip
    assert code == 2 and "no carbon figure" in err
    assert not (tmp_path / "new.md").exists()


def test_cyclonedx_bom_validates_against_the_1_6_schema(
    db: str, tmp_path: Path, invoke: Invoke
) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    out = tmp_path / "bom.json"
    code, _, err = invoke("export", "cyclonedx", "--db", db, "--model", "digits-mlp",
                          "--training", "train1", "--training", "train2",
                          "--inference", "serve1", "-o", str(out))  # fmt: skip
    assert code == 0, err
    text = out.read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    (model,) = bom["components"]
    assert model["type"] == "machine-learning-model"
    found = model["modelCard"]["considerations"]["environmentalConsiderations"]
    by_activity = {e["activity"]: e for e in found["energyConsumptions"]}
    assert set(by_activity) == {"training", "inference"}
    assert by_activity["training"]["activityEnergyCost"] == {"value": pytest.approx(3.0),
                                                             "unit": "kWh"}  # fmt: skip
    assert by_activity["training"]["co2CostEquivalent"]["value"] == pytest.approx(1.2e-3)
    props = {p["name"]: p["value"] for p in by_activity["inference"]["properties"]}
    assert props["greenml:runs"] == "serve1" and props["greenml:energy_method"] == "counter"
    assert float(props["greenml:energy_uncertainty_rel"]) == pytest.approx(0.05)
    # the validator is not a rubber stamp: a unit the spec does not know fails
    by_activity["training"]["activityEnergyCost"]["unit"] = "J"
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(bom)) is not None


def boamps_validator():  # type: ignore[no-untyped-def]
    from jsonschema import Draft4Validator
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT4

    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*_schema.json")}
    registry = Registry().with_resources(
        (s["id"], Resource.from_contents(s, default_specification=DRAFT4))
        for s in schemas.values()
    )
    return Draft4Validator(schemas["report_schema.json"], registry=registry)


def test_boamps_report_validates_against_boaviztas_published_schema(
    db: str, tmp_path: Path, invoke: Invoke
) -> None:
    out = tmp_path / "boamps.json"
    code, _, err = invoke("export", "boamps", "--db", db, "--runs", "train1", "--runs", "train2",
                          "--task-stage", "training", "--task-family", "image classification",
                          "--data-type", "image", "--infra-type", "onPremise",
                          "--algorithm", "MLP", "-o", str(out))  # fmt: skip
    assert code == 0, err
    report = json.loads(out.read_text())
    validator = boamps_validator()
    assert list(validator.iter_errors(report)) == []
    assert [m["powerConsumption"] for m in report["measures"]] == [pytest.approx(2.0),
                                                                    pytest.approx(1.0)]  # fmt: skip
    assert report["measures"][0]["gpuTrackingMode"] == "counter"
    assert report["quality"] == "high"  # ±5 %
    assert report["environment"]["powerSourceCarbonIntensity"] == pytest.approx(400.0)
    assert {"componentType": "gpu", "componentName": "NVIDIA H100 80GB HBM3",
            "nbComponent": 4} in report["infrastructure"]["components"]  # fmt: skip
    del report["task"]["dataset"]  # the schema requires it: the check can fail
    assert list(validator.iter_errors(report))


def test_boamps_refuses_a_data_type_the_format_does_not_know(db: str, invoke: Invoke) -> None:
    code, out, err = invoke("export", "boamps", "--db", db, "--runs", "train1",
                            "--task-stage", "training", "--task-family", "x",
                            "--data-type", "pixels")  # fmt: skip
    assert code == 2 and "--data-type must be one of" in err and out == ""


def test_cyclonedx_needs_an_activity_and_a_known_run(db: str, invoke: Invoke) -> None:
    code, _, err = invoke("export", "cyclonedx", "--db", db, "--model", "m")
    assert code == 2 and "at least one activity" in err
    code, _, err = invoke("export", "cyclonedx", "--db", db, "--model", "m", "--training", "zzz")
    assert code == 3 and len(err.strip().splitlines()) == 1  # no such run: not found
