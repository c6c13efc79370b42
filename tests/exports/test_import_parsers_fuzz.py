"""Property tests of the import parsers: any text is either runs or one ConfigError line."""

from __future__ import annotations

import csv
import io
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.importers.carbontracker import parse_run
from greenml.importers.codecarbon import parse_codecarbon

HEADER = ["timestamp", "project_name", "run_id", "duration", "emissions", "cpu_energy",
          "gpu_energy", "ram_energy", "energy_consumed", "country_name", "pue",
          "codecarbon_version"]  # fmt: skip
ODD = ["", "nan", "inf", "-1", "1e400", "2026-13-01T00:00:00"]
CELLS = st.one_of(st.text(max_size=12), st.floats(allow_nan=True), st.integers(),
                  st.sampled_from(ODD))


def _csv(rows: list[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(HEADER)
    writer.writerows(rows)
    return buffer.getvalue()


@given(st.text(max_size=400))
def test_any_text_is_runs_or_one_config_error(text: str) -> None:
    try:
        runs = parse_codecarbon(text, "x.csv")
    except ConfigError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(math.isfinite(r.total_j) and r.total_j >= 0 for r in runs)


@given(st.lists(st.lists(CELLS, min_size=len(HEADER), max_size=len(HEADER)),
                min_size=1, max_size=4))  # fmt: skip
def test_csv_rows_with_any_cells_are_checked_not_trusted(rows: list[list[object]]) -> None:
    try:
        runs = parse_codecarbon(_csv(rows), "emissions.csv")
    except ConfigError as exc:
        assert "emissions.csv" in str(exc) and "\n" not in str(exc)
        return
    for run in runs:
        assert math.isfinite(run.total_j) and run.total_j >= 0
        assert run.co2_g is not None and math.isfinite(run.co2_g) and run.co2_g >= 0
        assert run.duration_s >= 0 and run.ended_at.tzinfo is not None
        assert all(v > 0 and math.isfinite(v) for v in run.components_j.values())


@given(kwh=st.floats(0, 1e6), kg=st.floats(0, 1e6), duration=st.floats(0, 1e7),
       ram=st.floats(0, 1.0))  # fmt: skip
def test_valid_rows_keep_their_figures_in_greenml_units(
    kwh: float, kg: float, duration: float, ram: float
) -> None:
    row = ["2026-05-01T10:00:00", "p", "r1", duration, kg, kwh * (1 - ram), 0.0, kwh * ram, kwh,
           "Germany", 1.0, "3.3.2"]  # fmt: skip
    (run,) = parse_codecarbon(_csv([row]), "e.csv")
    assert run.total_j == pytest.approx(kwh * 3.6e6)
    assert run.co2_g == pytest.approx(kg * 1000)
    assert sum(run.components_j.values()) == pytest.approx(run.total_j, rel=1e-9, abs=1e-6)


LOG = ("2026-11-28 12:40:56 - carbontracker version 2.4.7\n"
       "2026-11-28 12:40:56 - Only predicted and actual consumptions are multiplied by a PUE "
       "coefficient of {pue}.\n2026-11-28 12:41:00 - Epoch 1:\n"
       "2026-11-28 12:41:00 - Duration: 0:00:0{secs}\n"
       "2026-11-28 12:41:00 - Average power usage (W) for cpu: {watts}\n")  # fmt: skip
OUTPUT = ("2026-11-28 12:41:01 - CarbonTracker: \nActual consumption:\n\tTime:\t0:00:0{secs}\n"
          "\tEnergy:\t{kwh} kWh\n\tCO2eq:\t{grams} g\n")  # fmt: skip


@given(st.text(max_size=300), st.text(max_size=300))
def test_any_carbontracker_text_is_a_run_or_one_config_error(log: str, output: str) -> None:
    try:
        run = parse_run(log, output, "x_carbontracker.log")
    except ConfigError as exc:
        assert "\n" not in str(exc)
    else:
        assert math.isfinite(run.total_j) and run.total_j >= 0


@given(pue=st.sampled_from(["1.0", "1.58", "0.5", "1e999", "1.2.3"]),
       watts=st.sampled_from(["60.0", "None", "-5", "1e999"]), secs=st.integers(0, 9),
       kwh=st.sampled_from(["0.000079", "1e999", "-1", "0"]),
       grams=st.sampled_from(["0.035", "nan", "7"]))  # fmt: skip
def test_carbontracker_figures_are_checked(pue: str, watts: str, secs: int, kwh: str,
                                           grams: str) -> None:  # fmt: skip
    log = LOG.format(pue=pue, secs=secs, watts=watts)
    try:
        run = parse_run(log, OUTPUT.format(secs=secs, kwh=kwh, grams=grams), "a_carbontracker.log")
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert float(pue) >= 1 and math.isfinite(float(kwh)) and float(kwh) >= 0
    assert run.total_j == pytest.approx(float(kwh) * 3.6e6 / float(pue))
    assert run.pue == pytest.approx(float(pue))
