"""`greenml import codecarbon | carbontracker` on files the real tools wrote in this test.

The imported runs keep the tool's own method (``imported`` block) and are never labelled
measured; they list and compare beside greenml's own runs.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.store import open_store
from tests.exports.peers import run_carbontracker, run_codecarbon
from tests.exports.stored import greenml_record, store_records

Invoke = Callable[..., tuple[int, str, str]]
KWH = 3.6e6


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("peers")
    csv_file, http_json = run_codecarbon(root)
    return {"csv": csv_file, "json": http_json, "ct": run_carbontracker(root / "ctlogs")}


@pytest.fixture
def invoke(capsys: pytest.CaptureFixture[str]) -> Invoke:
    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_codecarbon_csv_imports_beside_greenml_runs(
    peers: dict[str, Path], tmp_path: Path, invoke: Invoke
) -> None:
    db = store_records(tmp_path / "runs.db", greenml_record("ownrun1", 3.6e6, gpu_j=3.0e6))
    code, out, err = invoke("import", "codecarbon", str(peers["csv"]), "--db", db)
    assert code == 0, err
    assert "imported 1 run(s)" in err and "codecarbon 3.3.2" in out
    (row,) = list(csv.DictReader(peers["csv"].open()))
    with open_store(db) as store:
        listed = {r["id"]: r for r in store.list_runs(limit=0)}
        assert len(listed) == 2 and "ownrun1" in listed
        (imported_id,) = set(listed) - {"ownrun1"}
        rec = store.get_run_record(imported_id)
    assert rec.imported is not None and rec.imported.tool == "codecarbon"
    assert rec.imported.tool_version == "3.3.2" and "CodeCarbon's own" in rec.imported.method
    assert rec.imported.source_run_id == row["run_id"]
    assert {c.method for c in rec.energy.components.values()} == {"estimated"}
    assert rec.energy.total_j == pytest.approx(float(row["energy_consumed"]) * KWH)
    assert rec.energy.components["dram"].energy_j == pytest.approx(float(row["ram_energy"]) * KWH)
    assert rec.carbon is not None and rec.carbon.kg == pytest.approx(float(row["emissions"]))
    assert rec.carbon.location == "Germany" and "codecarbon" in (rec.carbon.source or "")
    assert rec.duration_s == pytest.approx(float(row["duration"]))
    assert rec.tags["imported"] == "codecarbon"
    # side by side in the list, the imported run says where it came from
    code, out, _ = invoke("runs", "list", "--db", db)
    assert code == 0 and "imported: codecarbon" in out and "python bench.py" in out
    # the same file again stores nothing new
    code, _, err = invoke("import", "codecarbon", str(peers["csv"]), "--db", db)
    assert code == 0 and "imported 0 run(s); 1 already stored" in err


def test_codecarbon_http_and_api_json_import_as_the_csv_does(
    peers: dict[str, Path], tmp_path: Path, invoke: Invoke
) -> None:
    from codecarbon.core.schemas import EmissionCreate

    db = f"sqlite:///{tmp_path / 'runs.db'}"
    assert invoke("import", "codecarbon", str(peers["json"]), "--db", db)[0] == 0
    posted = json.loads(peers["json"].read_text())
    # the API's emission objects, built by CodeCarbon's own dataclass as its ApiClient does,
    # split in two deltas of the same run (the API sums them)
    half = {k: v / 2 if isinstance(v, float) else v for k, v in posted[-1].items()}
    deltas = [dataclasses.asdict(EmissionCreate(
        timestamp=half["timestamp"], run_id="api-run-1", duration=int(half["duration"]),
        emissions_sum=half["emissions"], emissions_rate=half["emissions_rate"],
        cpu_power=half["cpu_power"], gpu_power=half["gpu_power"], ram_power=half["ram_power"],
        cpu_energy=half["cpu_energy"], gpu_energy=half["gpu_energy"],
        ram_energy=half["ram_energy"], energy_consumed=half["energy_consumed"],
    )) for _ in range(2)]  # fmt: skip
    api = tmp_path / "api.json"
    api.write_text(json.dumps(deltas))
    code, _, err = invoke("import", "codecarbon", str(api), "--db", db)
    assert code == 0, err
    with open_store(db) as store:
        records = [store.get_run_record(r["id"]) for r in store.list_runs(limit=0)]
    by_source = {r.imported.source_run_id: r for r in records if r.imported}
    api_run = by_source["api-run-1"]
    assert api_run.energy.total_j == pytest.approx(posted[-1]["energy_consumed"] * KWH)
    http_run = by_source[posted[-1]["run_id"]]
    assert http_run.carbon is not None
    assert http_run.carbon.kg == pytest.approx(posted[-1]["emissions"])


def test_carbontracker_log_dir_imports_with_its_pue_taken_out(
    peers: dict[str, Path], tmp_path: Path, invoke: Invoke
) -> None:
    from carbontracker import parser

    db = f"sqlite:///{tmp_path / 'runs.db'}"
    code, out, err = invoke("import", "carbontracker", str(peers["ct"]), "--db", db)
    assert code == 0, err and "carbontracker 2.4.7" in out
    (theirs,) = parser.parse_all_logs(str(peers["ct"]))  # Carbontracker's own reading
    with open_store(db) as store:
        (row,) = store.list_runs(limit=0)
        rec = store.get_run_record(row["id"])
    assert rec.imported is not None and rec.imported.tool == "carbontracker"
    assert rec.carbon is not None and rec.carbon.pue == pytest.approx(1.58)
    facility_kwh = theirs["actual"]["energy (kWh)"]
    assert rec.energy.total_j == pytest.approx(facility_kwh * KWH / 1.58, rel=1e-6)
    assert rec.carbon.kg * 1000 == pytest.approx(theirs["actual"]["co2eq (g)"])
    assert {c.method for c in rec.energy.components.values()} == {"estimated"}
    assert set(rec.energy.components) == {"cpu"}
    assert rec.duration_s == pytest.approx(theirs["actual"]["duration (s)"])


def test_bad_input_is_one_line_and_exit_2_with_nothing_stored(
    peers: dict[str, Path], tmp_path: Path, invoke: Invoke
) -> None:
    db = store_records(tmp_path / "runs.db", greenml_record("ownrun1", 3.6e6))
    broken = tmp_path / "broken.csv"
    lines = peers["csv"].read_text().splitlines()
    broken.write_text("\n".join([*lines, lines[1].replace(",", ",x", 5).replace("exp-7", "e8")]))
    for args in (("codecarbon", str(broken)), ("codecarbon", str(tmp_path / "missing.csv")),
                 ("carbontracker", str(tmp_path)), ("carbontracker", str(broken))):  # fmt: skip
        code, _out, err = invoke("import", *args, "--db", db)
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert "Traceback" not in err
    with open_store(db) as store:
        assert [r["id"] for r in store.list_runs(limit=0)] == ["ownrun1"]
