"""Redfish against sushy-tools' static server with the DMTF public-rackmount1 mockup, and
the whole path: ``greenml run --node-meter``, ``greenml calibrate``, a calibrated run."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from greenml.measure.node.spec import parse_node_meter
from tests.helpers import greenml_cli
from tests.measure.node.servers import sushy_static


@pytest.fixture(scope="module")
def bmc() -> Iterator[str]:
    with sushy_static() as url:
        yield url


def test_the_first_chassis_power_is_found_and_read(bmc: str) -> None:
    source = parse_node_meter(bmc)
    try:
        reading = source.read()
        assert reading.power_w == 344  # PowerControl[0].PowerConsumedWatts of the mockup
        assert source.where.endswith("/redfish/v1/Chassis/1U/Power")
        assert source.read().power_w == 344  # the resolved path is kept
    finally:
        source.close()


def test_environment_metrics_when_named(bmc: str) -> None:
    source = parse_node_meter(f"{bmc}/redfish/v1/Chassis/1U?uncertainty=0.03")
    try:
        assert source.read().power_w == 344 and source.uncertainty_rel == 0.03
    finally:
        source.close()


def test_a_chassis_that_is_not_there_is_one_line(bmc: str) -> None:
    source = parse_node_meter(f"{bmc}/redfish/v1/Chassis/2U")
    try:
        with pytest.raises(Exception, match="HTTP 404") as info:
            source.read()
        assert "\n" not in str(info.value)
    finally:
        source.close()


BUSY = "import time\nt=time.time()\nwhile time.time()-t<{s}: pass\n"


def _run(tmp_path: Path, db: str, name: str, code: str, *extra: str) -> dict:
    out = tmp_path / f"{name}.json"
    done = greenml_cli("run", "--db", db, "--name", name, "--json-out", str(out),
                       "--gpus", "none", "--sample-hz", "5", *extra,
                       "--", sys.executable, "-c", code)  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    record["_stderr"] = done.stderr
    return record


def test_run_with_a_node_meter_then_calibrate_then_a_calibrated_run(
    bmc: str, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'runs.db'}"
    runs = [
        _run(tmp_path, db, "idle", "import time; time.sleep(1.0)", "--node-meter", bmc),
        _run(tmp_path, db, "busy", BUSY.format(s=1.0), "--node-meter", bmc),
        _run(tmp_path, db, "longer", BUSY.format(s=2.0), "--node-meter", bmc),
    ]
    for record in runs:
        node = record["node"]
        assert node["method"] == "power-integrated" and node["source"] == "node (redfish)"
        assert node["energy_j"] == pytest.approx(344 * record["duration_s"], rel=0.25)
        assert node["components_j"] == pytest.approx(record["energy"]["total_j"])
        assert node["residual_j"] == pytest.approx(node["energy_j"] - node["components_j"])
        assert node["residual_uncertainty_j"] > 0
        assert "node:" in record["_stderr"] and "residual" in record["_stderr"]
    shown = greenml_cli("runs", "show", "--db", db, runs[0]["id"])
    assert shown.returncode == 0 and "node:" in shown.stdout and "residual" in shown.stdout

    fitted = greenml_cli("calibrate", "--db", db, "--json")
    assert fitted.returncode == 0, fitted.stderr
    calibration = json.loads(fitted.stdout)
    assert calibration["runs"] == 3 and calibration["held_out"] is True
    assert calibration["static_w"] == pytest.approx(344, rel=0.3)  # the mockup's constant 344 W
    assert calibration["residual_rel"] < 0.3

    later = _run(tmp_path, db, "later", "import time; time.sleep(0.5)")
    node = later["node"]
    assert node["method"] == "estimated" and node["calibration"]["runs"] == 3
    expected = calibration["static_w"] * later["duration_s"] + calibration["factor"] * (
        later["energy"]["total_j"]
    )
    assert node["energy_j"] == pytest.approx(expected)
    assert "calibrated on 3 runs, residual ±" in later["_stderr"]


def test_calibrate_with_too_few_runs_is_one_line_and_exit_2(tmp_path: Path) -> None:
    from greenml.store import open_store

    db = f"sqlite:///{tmp_path / 'empty.db'}"
    with open_store(db):  # a store with no run in it
        pass
    done = greenml_cli("calibrate", "--db", db)
    assert done.returncode == 2
    assert "needs at least 2 runs" in done.stderr and "Traceback" not in done.stderr
