"""``greenml run`` with a location and prices: carbon and cost in the run record, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

GREENML = [sys.executable, "-m", "greenml"]
PY = sys.executable
WORK = "sum(i * i for i in range(300_000))"
LOCATION_VARS = ("GREENML_CI", "GREENML_ZONE", "GREENML_REGION", "GREENML_COUNTRY",
                 "GREENML_INTENSITY_TRACE", "GREENML_PUE")  # fmt: skip


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A clean environment: own database, spool and config folder, no location set."""
    clean = {k: v for k, v in os.environ.items() if k not in LOCATION_VARS}
    clean.update(
        GREENML_DB=str(tmp_path / "runs.db"),
        GREENML_SPOOL_DIR=str(tmp_path / "spool"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    return clean


def greenml(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GREENML, *args], capture_output=True, text=True, env=env, timeout=60)


def run_json(env: dict[str, str], tmp_path: Path, *options: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "run.json"
    done = greenml(
        env, "run", "--gpus", "none", *options, "--json-out", str(out), "--", PY, "-c", WORK
    )
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text()), done.stderr


def test_ci_pue_and_price_give_carbon_and_cost(env: dict[str, str], tmp_path: Path) -> None:
    record, stderr = run_json(env, tmp_path, "--ci", "400", "--pue", "1.1", "--price", "0.2")
    facility_kwh = record["energy"]["total_j"] * 1.1 / 3.6e6
    carbon, cost = record["carbon"], record["cost"]
    assert carbon["kg"] == pytest.approx(facility_kwh * 0.4, rel=1e-9)
    assert carbon["facility_energy_kwh"] == pytest.approx(facility_kwh, rel=1e-9)
    assert carbon["it_energy_kwh"] == pytest.approx(record["energy"]["total_kwh"], rel=1e-9)
    assert carbon["intensity_g_per_kwh"] == pytest.approx(400.0)
    assert carbon["pue"] == 1.1
    assert carbon["uncertainty_rel"] >= record["energy"]["uncertainty_rel"]
    assert cost["usd"] == pytest.approx(facility_kwh * 0.2, rel=1e-9)
    assert cost["usd_per_kwh_effective"] == pytest.approx(0.2)
    # the summary says it too
    assert "carbon: " in stderr and "400 g/kWh" in stderr and "PUE 1.10" in stderr
    assert "cost:   $" in stderr
    # and the stored run shows it
    shown = greenml(env, "runs", "show", record["id"])
    assert shown.returncode == 0, shown.stderr
    assert "g CO2eq" in shown.stdout and "400 g/kWh" in shown.stdout
    assert "electricity" in shown.stdout


def test_a_run_without_location_has_carbon_unknown_with_a_hint(
    env: dict[str, str], tmp_path: Path
) -> None:
    record, stderr = run_json(env, tmp_path)
    assert record["carbon"]["kg"] is None
    assert record["carbon"]["status"] == "unknown"
    assert "--zone" in record["carbon"]["hint"]
    assert "carbon: unknown" in stderr


def test_an_intensity_trace_that_misses_the_run_keeps_the_run(
    env: dict[str, str], tmp_path: Path
) -> None:
    trace = tmp_path / "ci_2022.csv"
    trace.write_text(
        "time,g_per_kwh\n" + "".join(f"2022-03-01T{h:02d}:00:00Z,{100 + h}\n" for h in range(24))
    )
    record, stderr = run_json(env, tmp_path, "--intensity-trace", str(trace))
    assert record["status"] == "completed"
    assert record["carbon"]["kg"] is None
    assert record["carbon"]["status"] == "unavailable"
    assert "2022" in record["carbon"]["reason"]
    assert "carbon: unavailable" in stderr
    listed = greenml(env, "runs", "list", "--json")
    assert record["id"] in listed.stdout


def test_a_price_trace_that_misses_the_run_keeps_the_run(
    env: dict[str, str], tmp_path: Path
) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "Datetime (UTC),Datetime (Local),Price (USD/MWh)\n"
        "2023-01-01 00:00:00+00:00,2023-01-01 01:00:00+01:00,-5.0\n"
        "2023-01-01 01:00:00+00:00,2023-01-01 02:00:00+01:00,40.0\n"
    )
    record, _ = run_json(env, tmp_path, "--ci", "300", "--price-trace", str(prices))
    assert record["carbon"]["status"] == "ok"
    assert record["cost"]["status"] == "unavailable"
    assert "not the run's" in record["cost"]["reason"]


def test_a_spooled_run_keeps_its_carbon(env: dict[str, str]) -> None:
    done = greenml(env, "run", "--gpus", "none", "--ci", "250", "--instance", "g5.xlarge", "--",
                   PY, "-c", "pass")  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = greenml(env, "runs", "list", "--json", "-n", "1")
    run_id = json.loads(listed.stdout.splitlines()[0])["id"]
    record = json.loads(greenml(env, "runs", "export", run_id).stdout)
    assert record["carbon"]["intensity_g_per_kwh"] == pytest.approx(250.0)
    assert record["cost"]["basis"] == "instance"
    assert record["cost"]["instance"]["usd_per_h"] == pytest.approx(1.006)


def test_bad_accounting_options_stop_before_the_command(
    env: dict[str, str], tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    script = f"open({str(marker)!r}, 'w').close()"
    for options in (["--pue", "martian"], ["--instance", "p9.huge"], ["--ci", "-3"]):
        done = greenml(env, "run", "--gpus", "none", *options, "--", PY, "-c", script)
        assert done.returncode == 2, (options, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr  # one line, no traceback
        assert not marker.exists()
    bad = tmp_path / "bad.csv"
    bad.write_text("Datetime (UTC),Datetime (Local),Price (USD/MWh)\n2023-01-01,x,cheap\n")
    done = greenml(env, "run", "--price-trace", str(bad), "--", PY, "-c", script)
    assert done.returncode == 2
    assert f"{bad}:2" in done.stderr
    assert not marker.exists()
