"""Issue 29's user-facing wording: equivalences, source-data gaps, NaN columns, absent blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.accounting.equivalences import equivalences
from greenml.diagnose.job import diagnose_job
from greenml.server.dashboard.footprint import footprint_html
from greenml.store import open_store
from tests.helpers import greenml_cli
from tests.jobs.builders import node_run


def test_equivalences_below_a_size_are_left_out() -> None:
    tiny = {e.key for e in equivalences(co2_g=0.09, energy_j=800.0)}
    assert "passenger_car_years" not in tiny and "us_household_years" not in tiny
    big = {e.key for e in equivalences(co2_g=4.6e6, energy_j=3.6e10)}
    assert {"passenger_car_years", "smartphone_charges"} <= big


def test_source_data_gaps_are_said_once_as_what_they_are(tmp_path: Path) -> None:
    done = greenml_cli("run", "--db", str(tmp_path / "r.db"), "--zone", "DE", "--", "true")
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "hours estimated" not in out
    assert out.count("were estimated to fill gaps") == 1
    assert "30 of 8760 hourly values in the provider's data" in out


def test_runs_unknown_figures_are_nan(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    import greenml

    db = str(tmp_path / "r.db")
    done = greenml_cli("run", "-q", "--db", db, "--json-out", str(tmp_path / "r.json"), "--",
                       "true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    frame = greenml.runs(db=db)
    for column in ("co2_kg", "cost_usd", "co2_uncertainty_rel", "pue", "energy_kwh"):
        assert frame[column].dtype == "float64", column
    assert pd.isna(frame["co2_kg"]).all() and frame["co2_kg"].map(type).eq(float).all()


def test_run_page_says_why_flops_were_not_counted() -> None:
    import re

    html = footprint_html({"carbon": {"kg": 0.1, "uncertainty_rel": 0.1}})
    text = " ".join(re.sub(r"<[^>]+>", "", html).split())  # what the page says
    assert "earlier greenml" not in text
    assert "this run counted no FLOPs" in text
    assert "no market-based declaration" in text


def test_cpu_only_job_gets_no_gpu_advice(tmp_path: Path) -> None:
    with open_store(str(tmp_path / "r.db")) as store:
        for rank in range(3):
            node_run(store, {"job_id": "cpu", "node": f"n{rank}", "node_rank": rank,
                             "expected_nodes": 3}, gpu_j=[])  # fmt: skip
        found = diagnose_job(store, "cpu").to_dict()
    said = json.dumps(found["notes"])
    assert "GPU samples" not in said
    assert "a CPU-only job" in said


def test_commands_that_wrote_a_file_say_so_in_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    assert greenml_cli("run", "-q", "--db", db, "--json-out", str(tmp_path / "r.json"),
                       "--", "true").returncode == 0  # fmt: skip
    out = tmp_path / "statement.md"
    run_id = json.loads((tmp_path / "r.json").read_text())["id"]
    done = greenml_cli("report", run_id, "--db", db, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"greenml: wrote {out} ({out.stat().st_size:,} bytes)\n"


def test_run_summary_is_quiet_by_default_and_notes_come_with_v(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    quiet = greenml_cli("run", "--db", db, "--", "true")
    assert quiet.returncode == 0, quiet.stderr
    assert "note:" not in quiet.stderr
    assert "on how the figures were obtained: greenml -v run" in quiet.stderr
    loud = greenml_cli("-v", "run", "--db", db, "--", "true")
    assert "  note: " in loud.stderr
