"""Every run record greenml writes fits the shipped JSON Schema and its types, exactly."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from greenml.cli import main
from greenml.errors import RecordTypeError
from greenml.ledger.canonical import canonical_json
from greenml.measure.measurement import Sample
from greenml.record.run_record import RECORD_SCHEMA_VERSION, RunRecord
from greenml.record.schema import generate_schema, schema_text, shipped_schema_text
from greenml.run.environment import capture_environment
from greenml.run.spool import ingest, ingest_pending
from greenml.store import open_store
from greenml.store.repository import Store
from tests.ledger.conftest import payload as ledger_payload
from tests.report import builders
from tests.run_records import record as hand_record

PY = sys.executable
PROGRAM = (
    "import greenml\n"
    "from greenml.measure.meter import Meter\n"
    "m = Meter(gpus=[], sample_hz=0, publish_windows=True)\n"
    "for i in range(3):\n"
    "    with m.window('step'):\n"
    "        sum(range(20_000))\n"
    "    greenml.progress(i + 1, 3)\n"
)
LOCATION_VARS = ("GREENML_CI", "GREENML_ZONE", "GREENML_REGION", "GREENML_COUNTRY",
                 "GREENML_INTENSITY_TRACE", "GREENML_PUE")  # fmt: skip


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(shipped_schema_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check(validator: jsonschema.Draft202012Validator, record: dict[str, Any]) -> RunRecord:
    """The record fits the schema and the types (strictly) and reads back byte for byte."""
    validator.validate(record)
    typed = RunRecord.from_dict(record, strict=True)
    assert json.dumps(typed.to_dict()) == json.dumps(record)
    assert canonical_json(RunRecord.from_dict(record).to_dict()) == canonical_json(record)
    return typed


def greenml_env(tmp_path: Path, db_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LOCATION_VARS}
    env.update(GREENML_DB=db_url, GREENML_SPOOL_DIR=str(tmp_path / "spool"),
               GREENML_LEDGER=str(tmp_path / "ledger.jsonl"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))  # fmt: skip
    return env


def test_the_shipped_schema_is_the_one_the_types_give() -> None:
    assert shipped_schema_text() == schema_text()
    jsonschema.Draft202012Validator.check_schema(generate_schema())


def test_greenml_schema_run_record_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "run-record"]) == 0
    out = capsys.readouterr().out
    assert out == shipped_schema_text()
    assert json.loads(out)["properties"]["energy"] == {"$ref": "#/$defs/EnergyBlock"}


def test_a_greenml_run_record_fits(
    db_url: str, tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    """Carbon, cost with an instance, progress, the program's windows: SQLite and PostgreSQL."""
    out = tmp_path / "run.json"
    done = subprocess.run(
        [PY, "-m", "greenml", "run", "-q", "--gpus", "none", "--name", "fit", "--tag", "k=v",
         "--ci", "250", "--pue", "1.2", "--price", "0.2", "--instance", "g5.xlarge",
         "--json", str(out), "--", PY, "-c", PROGRAM],
        capture_output=True, text=True, env=greenml_env(tmp_path, db_url), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = json.loads(out.read_text())
    with open_store(db_url) as store:
        stored = store.get_record(written["id"])
    assert stored == written
    typed = check(validator, stored)
    assert typed.schema_version == RECORD_SCHEMA_VERSION
    assert typed.carbon is not None and typed.carbon.status == "ok"
    assert typed.cost is not None and typed.cost.instance is not None
    assert typed.progress is not None and typed.progress.projection is not None
    assert typed.environment.python is not None and typed.measured_devices
    assert [w.name for w in typed.windows] == ["run"] + ["step/rank0"] * 3


FLOP_PROGRAM = (  # what FlopSampler.publish() sends (the counting is tested in tests/measure)
    "from greenml.measure import events\n"
    "events.emit('flops', status='ok', flops=655360.0, steps=20, sampled_steps=4,\n"
    "            samples=160, precision='fp32', precision_source='given', spread_rel=0.0,\n"
    "            windows={'step': {'flops_per_step': 32768.0, 'steps': 20, 'sampled_steps': 4}})\n"
)


def test_a_record_carries_flops_market_water_and_embodied(
    tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    """The whole footprint in one record, each block typed; the location-based block intact."""
    db_url = f"sqlite:///{tmp_path / 'runs.db'}"
    out = tmp_path / "run.json"
    done = subprocess.run(
        [PY, "-m", "greenml", "run", "-q", "--gpus", "none", "--country", "FR", "--pue", "1.2",
         "--certificates", "40%@2025:GO", "--wue", "aws", "--json-out", str(out), "--",
         PY, "-c", FLOP_PROGRAM],
        capture_output=True, text=True, env=greenml_env(tmp_path, db_url), timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    typed = check(validator, json.loads(out.read_text()))
    assert typed.flops is not None and typed.flops.method == "counted"
    assert typed.flops.flops == pytest.approx(655360.0)
    assert typed.flops.sampled_steps == 4 and typed.flops.j_per_sample is not None
    assert typed.flops.windows is not None and typed.flops.windows["step"].steps == 20
    assert typed.carbon is not None and typed.carbon.kg is not None
    market = typed.carbon_market
    assert market is not None and market.kg == pytest.approx(0.6 * typed.carbon.kg)
    assert typed.water is not None and typed.water.litres is not None
    assert typed.water.wue_l_per_kwh == 0.18
    assert typed.embodied is not None and typed.embodied.status == "unknown"  # CPU-only


def test_a_spooled_run_fits_once_ingested(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, validator: jsonschema.Draft202012Validator
) -> None:
    """A short command's run goes to the spool; a detached writer or this reader stores it."""
    db_url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = greenml_env(tmp_path, db_url)
    done = subprocess.run([PY, "-m", "greenml", "run", "-q", "--gpus", "none", "--", "true"],
                          capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("GREENML_SPOOL_DIR", env["GREENML_SPOOL_DIR"])
    monkeypatch.setenv("GREENML_LEDGER", env["GREENML_LEDGER"])
    with open_store(db_url) as store:
        ingest_pending(store, db_url)
        (row,) = store.list_runs()
        check(validator, store.get_record(row["id"]))


def test_the_records_the_ledger_hashes_fit(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    validator: jsonschema.Draft202012Validator,
) -> None:  # fmt: skip
    """Spooled payloads as the ledger tests write them, stored by the spool's ingest."""
    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("GREENML_LEDGER", str(ledger))
    monkeypatch.delenv("GREENML_LEDGER_KEY", raising=False)
    from greenml.ledger.canonical import record_sha256

    for i in range(2):
        run_id = ingest(store, ledger_payload(store.url, f"{i:012x}", energy_j=30.0 + i))
        record = store.get_record(run_id)
        check(validator, record)
        entry = json.loads(ledger.read_text().splitlines()[i])
        assert entry["record_sha256"] == record_sha256(record)


def test_a_killed_run_fits(store: Store, validator: jsonschema.Draft202012Validator) -> None:
    dead = subprocess.Popen([PY, "-c", "pass"])
    dead.wait()
    run_id = store.create_run(name="killed", command=["train"], tags={}, started_at=1.7e9,
                              pid=dead.pid, hostname=socket.gethostname())  # fmt: skip
    store.update_extra(run_id, {"measured_devices": {
        "gpu0": {"component": "gpu", "name": "H100", "method": "counter",
                 "uncertainty_rel": 0.05, "note": ""},
        "cpu0": {"component": "cpu", "name": "Xeon", "method": "estimated",
                 "uncertainty_rel": 0.3, "note": "modelled from utilization"},
    }})  # fmt: skip
    store.set_environment(run_id, capture_environment(include_hostname=False))
    samples = [Sample(d, c, 1.7e9 + t, 100.0 + t, {"utilization": 0.5})
               for t in range(5) for d, c in (("gpu0", "gpu"), ("cpu0", "cpu"))]  # fmt: skip
    store.add_samples(run_id, samples)
    record = store.get_record(run_id)
    assert record["status"] == "incomplete" and record["ended_at"] is None
    typed = check(validator, record)
    assert typed.energy.method == "estimated" and typed.energy.note


@pytest.mark.parametrize("carbon", ["400", "unknown", "unavailable"])
@pytest.mark.parametrize("price", [0.2, None])
def test_the_report_builders_records_fit(
    store: Store, carbon: str, price: float | None, validator: jsonschema.Draft202012Validator
) -> None:
    run_id = builders.make_run(store, carbon=carbon, price=price, tags={"tokens": "1000"})
    check(validator, store.get_record(run_id))


@pytest.mark.parametrize("kwargs", [{}, {"gpu_j": 900.0}, {"ci_g_per_kwh": None,
                                    "usd_per_kwh": None}])  # fmt: skip
def test_the_hand_built_report_records_fit(
    kwargs: dict[str, Any], validator: jsonschema.Draft202012Validator
) -> None:
    record = hand_record(1000.0, **kwargs)
    typed = check(validator, record)
    assert typed.schema_version == 1  # no schema_version: written before it was kept


def test_a_schedule_block_fits(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    validator: jsonschema.Draft202012Validator,
) -> None:  # fmt: skip
    from greenml.accounting import location
    from greenml.run.green import GreenRun
    from greenml.schedule.green import GreenRequest, make_plan
    from tests.run.test_run_when_green_cli import T0, write_trace

    for var in location.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(location, "default_config_path", lambda: tmp_path / "none.toml")
    trace = write_trace(tmp_path / "t.csv", T0 - 3600, 3600.0, 30, [(T0 + 7200, T0 + 4 * 3600)])
    request = GreenRequest(deadline="+20h", duration="1h", zone="DE", intensity_trace=str(trace))
    block = GreenRun(make_plan(request, T0), waited_s=7200.0).block
    run_id = builders.make_run(store)
    store.update_extra(run_id, {"schedule": block})
    typed = check(validator, store.get_record(run_id))
    assert typed.schedule is not None and typed.schedule.executed is not None
    assert typed.schedule.executed.waited_s == 7200.0


CORRUPTIONS = [
    ("energy", "total_j", "12"),
    ("energy", "components", []),
    (None, "status", "done"),
    (None, "exit_code", 0.5),
    (None, "tags", {"k": 1}),
    ("carbon", "kg", "0.1"),
    ("cost", "status", "fine"),
    ("environment", "python", "3.11"),
]


@pytest.mark.parametrize(("block", "key", "value"), CORRUPTIONS)
def test_a_value_of_the_wrong_type_fails(
    block: str | None, key: str, value: Any, validator: jsonschema.Draft202012Validator
) -> None:
    good = hand_record(1000.0, gpu_j=900.0)
    good["environment"]["python"] = {"version": "3.11.7"}
    check(validator, good)
    bad = copy.deepcopy(good)
    (bad if block is None else bad[block])[key] = value
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)
    with pytest.raises(RecordTypeError, match=key):
        RunRecord.from_dict(bad, strict=True)
    # read leniently (a record someone else wrote): kept as it is, never lost
    assert json.dumps(RunRecord.from_dict(bad).to_dict()) == json.dumps(bad)


def test_a_missing_required_key_fails(validator: jsonschema.Draft202012Validator) -> None:
    bad = hand_record(1000.0)
    del bad["energy"]["total_kwh"]
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(bad)
    with pytest.raises(RecordTypeError, match="total_kwh"):
        RunRecord.from_dict(bad, strict=True)
    assert RunRecord.from_dict(bad).to_dict() == bad


def test_a_version_1_record_stays_byte_identical_and_verifies(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run stored and ledgered by a greenml that kept no schema_version still verifies."""
    from sqlalchemy import update

    from greenml.ledger import verify
    from greenml.ledger.canonical import record_sha256
    from greenml.ledger.hook import append_run
    from greenml.store.schema import runs

    ledger = tmp_path / "ledger.jsonl"
    monkeypatch.setenv("GREENML_LEDGER", str(ledger))
    with open_store(db_url) as store:
        run_id = builders.make_run(store)
        with store._write("age") as conn:  # what a version-1 greenml stored: no schema_version
            extra = json.loads(conn.execute(runs.select()).mappings().one()["extra"])
            del extra["schema_version"]
            conn.execute(update(runs).values(extra=json.dumps(extra)))
        old = store.get_record(run_id)
        assert "schema_version" not in old
        assert RunRecord.from_dict(old).schema_version == 1
        append_run(store.url, old)
        assert json.loads(ledger.read_text())["record_sha256"] == record_sha256(old)
        assert verify(ledger, store=store).ok


def test_version_2_records_read_byte_for_byte_and_version_3_blocks_too(
    validator: jsonschema.Draft202012Validator,
) -> None:
    """A record written before the footprint blocks keeps its bytes (so its ledger hash);
    one with them reads back exactly too."""
    older = {**hand_record(3.6e6), "schema_version": 2}
    typed = check(validator, older)
    assert typed.carbon_market is None and typed.water is None and typed.flops is None
    assert "carbon_market" not in typed.to_dict()
    newer = {
        **older, "schema_version": 3,
        "carbon_market": {"status": "ok", "kg": 0.1, "basis": "certificates+supplier",
                          "parts": [{"basis": "supplier", "kwh": 1.0, "g_per_kwh": 100,
                                     "kg": 0.1, "source": "s", "uncertainty_rel": 0}],
                          "offsets": [{"kg": 5, "kind": "forestry", "vintage": 2024}]},
        "water": {"status": "partial", "litres": 1.8, "onsite_l": 1.8, "offsite_l": None},
        "embodied": {"status": "unknown", "kg": None, "missing": ["CPU only"]},
        "flops": {"status": "ok", "flops": 1e12, "method": "given", "mfu": None,
                  "windows": {"step": {"flops_per_step": 1e10, "steps": 100}}},
    }  # fmt: skip
    assert check(validator, newer).flops is not None
    broken = copy.deepcopy(newer)
    broken["water"]["litres"] = "lots"
    with pytest.raises(RecordTypeError):
        RunRecord.from_dict(broken, strict=True)
