"""Hourly intensity traces: Electricity Maps exports, plain CSV, coverage and fallback."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.accounting.intensity import ConstantSource, IntensityProvenance
from greenml.accounting.series import weighted_total
from greenml.accounting.traces import TraceSource, load_trace
from greenml.errors import ConfigError

SHARED = Path(__file__).parents[2].parent / "shared" / "data"
DE_2023 = SHARED / "carbon_intensity" / "DE-LU_2023_hourly.csv"
needs_shared = pytest.mark.skipif(not DE_2023.exists(), reason=f"no shared data at {SHARED}")
HEADER = (
    "Datetime (UTC),Country,Zone Name,Zone Id,Carbon Intensity gCO₂eq/kWh (direct),"
    "Carbon Intensity gCO₂eq/kWh (LCA),Low Carbon Percentage,Renewable Percentage,"
    "Data Source,Data Estimated,Data Estimation Method"
)


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp()


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def export_rows(n: int, start: str = "2023-01-01 00:00:00") -> list[str]:
    t0 = utc(start)
    rows = []
    for i in range(n):
        t = datetime.fromtimestamp(t0 + 3600 * i, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        rows.append(f"{t},Germany,Germany,DE,{100 + i},{150 + i},80,70,entsoe.eu,false,")
    return rows


# ----------------------------------------------------------------------------- Electricity Maps


@needs_shared
def test_electricity_maps_export_is_read_with_first_and_last_rows() -> None:
    trace = load_trace(DE_2023)
    s = trace.series
    assert len(s.values) == 8760
    assert s.start_s == utc("2023-01-01 00:00")
    assert s.times_s[-1] == utc("2023-12-31 23:00")
    assert s.end_s == utc("2024-01-01 00:00")
    # first row: 140.51 direct, 185.8 LCA; last row: 133.89 direct, 178.79 LCA
    assert (s.values[0], s.values[-1]) == (185.8, 178.79)
    direct = load_trace(DE_2023, "direct").series.values
    assert (direct[0], direct[-1]) == (140.51, 133.89)
    assert np.all(direct <= s.values)  # life-cycle adds upstream emissions


@needs_shared
def test_electricity_maps_provenance() -> None:
    prov = load_trace(DE_2023, "direct").provenance
    assert prov.resolution == "hourly" and prov.kind == "average" and prov.scope == "direct"
    assert prov.location == "DE"
    assert "Electricity Maps" in prov.source and DE_2023.name in prov.source
    assert load_trace(DE_2023).provenance.scope == "lifecycle"
    assert load_trace(DE_2023, location="DE-LU").provenance.location == "DE-LU"


@needs_shared
def test_energy_is_weighted_by_the_trace_hour_it_was_used_in() -> None:
    series = load_trace(DE_2023).intensity(utc("2023-01-01 00:00"), utc("2023-01-01 02:00")).series
    # 1 kWh in the first hour, 2 kWh in the second (185.8 and 185.7 g/kWh)
    times = [utc("2023-01-01 00:00"), utc("2023-01-01 01:00"), utc("2023-01-01 02:00")]
    assert weighted_total(times, [0.0, 1.0, 3.0], series) == pytest.approx(185.8 + 2 * 185.7)


def test_quoted_fields_and_a_newer_header_spelling(tmp_path: Path) -> None:
    header = HEADER.replace("(LCA)", "(Life cycle)").replace("Intensity", "intensity")
    rows = [r.replace("Germany,Germany", '"Germany, north","Germany, all"') for r in export_rows(3)]
    trace = load_trace(write(tmp_path, "\n".join([header, *rows]) + "\n"))
    assert list(trace.series.values) == [150.0, 151.0, 152.0]


def test_export_without_the_asked_column(tmp_path: Path) -> None:
    header = HEADER.replace(",Carbon Intensity gCO₂eq/kWh (LCA)", ",Other")
    path = write(tmp_path, "\n".join([header, *export_rows(2)]))
    with pytest.raises(ConfigError, match=r"trace\.csv:1: no lifecycle carbon intensity column"):
        load_trace(path)


# ----------------------------------------------------------------------------- plain CSV


@pytest.mark.parametrize("header", ["time,g_per_kwh\n", "Time,Carbon Intensity\n", ""])
def test_plain_csv_with_or_without_header(tmp_path: Path, header: str) -> None:
    body = "2024-03-02T10:00:00,300\n2024-03-02T11:00:00,200.5\n2024-03-02T12:00:00,100\n"
    trace = load_trace(write(tmp_path, header + body), "direct")
    assert list(trace.series.values) == [300.0, 200.5, 100.0]
    assert trace.series.start_s == utc("2024-03-02 10:00")  # naive = UTC
    assert trace.series.end_s == utc("2024-03-02 13:00")
    prov = trace.provenance
    assert (prov.resolution, prov.scope, prov.location) == ("hourly", "direct", "-")
    assert prov.source == "trace file trace.csv"


def test_plain_csv_with_offsets_is_converted_to_utc(tmp_path: Path) -> None:
    body = "time,g_per_kwh\n2024-03-02T12:00:00+02:00,300\n2024-03-02T11:00:00Z,200\n"
    trace = load_trace(write(tmp_path, body))
    assert list(trace.series.times_s) == [utc("2024-03-02 10:00"), utc("2024-03-02 11:00")]


def test_sub_hourly_resolution_is_detected(tmp_path: Path) -> None:
    rows = [f"2024-01-01T00:{m:02d}:00,{100 + m}" for m in range(0, 60, 15)]
    trace = load_trace(write(tmp_path, "time,g_per_kwh\n" + "\n".join(rows)))
    assert trace.provenance.resolution == "sub-hourly"
    assert trace.series.last_step_s == 900.0
    assert trace.series.end_s == utc("2024-01-01 01:00")


def test_coarser_than_hourly_is_refused(tmp_path: Path) -> None:
    rows = [f"2024-01-0{d}T00:00:00,100" for d in range(1, 5)]
    with pytest.raises(ConfigError, match="hourly or finer"):
        load_trace(write(tmp_path, "time,g_per_kwh\n" + "\n".join(rows)))


# ----------------------------------------------------------------------------- malformed rows


@pytest.mark.parametrize(
    ("bad_row", "expected"),
    [
        ("2024-01-01T02:00:00,abc", "could not convert"),
        ("2024-01-01T02:00:00,", "could not convert"),
        ("2024-01-01T02:00:00,-5", "not 0–5000"),
        ("2024-01-01T02:00:00,100,7", "expected 2 columns, found 3"),
        ("yesterday,100", "'yesterday' is not an ISO 8601 time"),
        ("2024-01-01T01:00:00,100", "is not after the previous row"),
    ],
)
def test_malformed_plain_row_names_file_and_line(
    tmp_path: Path, bad_row: str, expected: str
) -> None:
    text = f"time,g_per_kwh\n2024-01-01T00:00:00,100\n2024-01-01T01:00:00,100\n{bad_row}\n"
    path = write(tmp_path, text + "2024-01-01T05:00:00,100\n")
    with pytest.raises(ConfigError) as err:
        load_trace(path)
    assert str(err.value).startswith(f"{path}:4: ")
    assert expected in str(err.value)


def test_malformed_export_row_names_file_and_line(tmp_path: Path) -> None:
    rows = export_rows(6)
    rows[3] = rows[3].replace(",153,", ",n/a,")  # data row 4 is line 5 of the file
    path = write(tmp_path, "\n".join([HEADER, *rows]), "DE_export.csv")
    with pytest.raises(ConfigError, match=r"DE_export\.csv:5: could not convert"):
        load_trace(path)


def test_unreadable_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read trace"):
        load_trace(tmp_path / "missing.csv")
    with pytest.raises(ConfigError, match="empty trace file"):
        load_trace(write(tmp_path, ""))
    with pytest.raises(ConfigError, match="no data rows"):
        load_trace(write(tmp_path, "time,g_per_kwh\n"))


# ----------------------------------------------------------------------------- coverage


@needs_shared
def test_a_span_outside_the_trace_names_both_spans() -> None:
    trace = load_trace(DE_2023)
    with pytest.raises(ConfigError) as err:
        trace.intensity(utc("2024-03-02 10:00"), utc("2024-03-02 11:00"))
    assert str(err.value) == (
        "trace DE-LU_2023_hourly.csv covers 2023-01-01 00:00 UTC to 2024-01-01 00:00 UTC; "
        "the run needs 2024-03-02 10:00 to 11:00 UTC"
    )


@needs_shared
def test_a_span_partly_outside_names_the_missing_part() -> None:
    trace = load_trace(DE_2023)
    with pytest.raises(ConfigError, match=r"\(no data for 2024-01-01 00:00 to 02:00 UTC\)"):
        trace.intensity(utc("2023-12-31 22:00"), utc("2024-01-01 02:00"))
    inside = trace.intensity(utc("2023-12-31 22:00"), utc("2024-01-01 00:00"))
    assert inside.provenance.resolution == "hourly"


def test_a_gap_inside_the_trace_is_not_filled(tmp_path: Path) -> None:
    hours = [0, 1, 2, 8, 9]  # 03:00 to 08:00 missing
    rows = [f"2024-01-01T{h:02d}:00:00,{100 + h}" for h in hours]
    trace = load_trace(write(tmp_path, "time,g_per_kwh\n" + "\n".join(rows)))
    assert trace.intensity(utc("2024-01-01 00:30"), utc("2024-01-01 02:30")).series is trace.series
    with pytest.raises(
        ConfigError, match=r"no data for 2024-01-01 04:00 to 06:00 UTC, a gap in the trace\)"
    ):
        trace.intensity(utc("2024-01-01 04:00"), utc("2024-01-01 06:00"))


@needs_shared
def test_fallback_is_used_and_labelled() -> None:
    from greenml.accounting.static import zone_source

    trace = load_trace(DE_2023, fallback=zone_source("DE"))
    result = trace.intensity(utc("2024-03-02 10:00"), utc("2024-03-02 11:00"))
    prov = result.provenance
    assert prov.resolution == "yearly" and prov.year == 2023
    assert result.series.values[0] == zone_source("DE").intensity(0, 1).series.values[0]
    assert "fallback" in prov.source
    assert "trace DE-LU_2023_hourly.csv covers 2023-01-01 00:00 UTC" in prov.source
    assert "the run needs 2024-03-02 10:00 to 11:00 UTC" in prov.source
    # inside the trace the fallback is not used
    inside = trace.intensity(utc("2023-06-01 10:00"), utc("2023-06-01 11:00"))
    assert inside.provenance.resolution == "hourly" and "fallback" not in inside.provenance.source


def test_trace_source_is_an_intensity_source_built_from_a_series() -> None:
    from greenml.accounting.series import StepSeries

    series = StepSeries.from_points([0.0, 3600.0], [10.0, 20.0], "g/kWh")
    prov = IntensityProvenance("test", "-", "hourly", "average", "lifecycle")
    fallback = ConstantSource.user(42.0)
    trace = TraceSource(series, prov, "mem", fallback=fallback)
    assert trace.intensity(0.0, 7200.0).series is series
    assert trace.intensity(0.0, 9000.0).series.values[0] == 42.0
    assert "given by the user [fallback: trace mem covers" in (
        trace.intensity(0.0, 9000.0).provenance.source
    )


@needs_shared
@pytest.mark.parametrize("column", ["direct", "lifecycle"])
def test_fast_and_row_by_row_parsers_agree(column: str) -> None:
    from greenml.accounting import trace_csv

    table = trace_csv.read_trace_csv(DE_2023, column)  # type: ignore[arg-type]
    lines = DE_2023.read_text(encoding="utf-8").splitlines()
    value_at = 4 if column == "direct" else 5
    times, values = trace_csv._slow(DE_2023, lines, 1, 11, value_at)
    assert np.array_equal(table.times_s, times) and np.array_equal(table.values, values)
    assert table.export and table.zone == "DE"


@pytest.mark.parametrize("text", ["foo,bar\n1,2\n", "1,2\n3,4\n", "time,g\n2023,100\n2024,100\n"])
def test_a_file_whose_times_are_not_dates_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(ConfigError, match=r"trace\.csv:\d+: .* is not an ISO 8601 time"):
        load_trace(write(tmp_path, text), "direct")


def test_5000_g_per_kwh_is_accepted_as_the_message_says(tmp_path: Path) -> None:
    path = write(tmp_path, "2024-03-02T10:00:00,5000\n2024-03-02T11:00:00,0\n")
    trace = load_trace(path, "direct")
    assert list(trace.series.values) == [5000.0, 0.0]
    with pytest.raises(ConfigError, match="is not 0–5000 g/kWh"):
        load_trace(write(tmp_path, "2024-03-02T10:00:00,5000.5\n"), "direct")
    ConstantSource.user(5000.0)  # --ci 5000: inside "0–5000", as the message says
    with pytest.raises(ConfigError, match="0–5000"):
        ConstantSource.user(5000.1)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(alphabet=st.sampled_from(list("0123456789-:T ,.\n\"abZ+e")), max_size=120))
def test_any_text_is_a_trace_or_one_config_error(tmp_path: Path, text: str) -> None:
    """Fuzz: the reader never raises anything but ConfigError, and what it accepts is sane."""
    path = write(tmp_path, text)
    try:
        trace = load_trace(path, "direct")
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    values = np.asarray(trace.series.values)
    times = np.asarray(trace.series.times_s)
    assert len(values) >= 1 and np.all((values >= 0) & (values <= 5000))
    assert np.all(np.diff(times) > 0)
    assert times[0] > datetime(1000, 1, 1, tzinfo=timezone.utc).timestamp()
