"""Electricity cost (flat and hourly, negative prices included) and instance prices."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from greenml.accounting.cost import FlatPrice, PriceTrace, cost_of, instance_price
from greenml.accounting.instances import load_table
from greenml.accounting.pue import Pue
from greenml.errors import ConfigError

HOUR = 3600.0
KWH = 3.6e6
START = datetime(2023, 1, 1, tzinfo=timezone.utc)
T0 = START.timestamp()
HEADER = "Datetime (UTC),Datetime (Local),Price (USD/MWh)\n"
SHARED_PRICES = Path("/work/shared/data/electricity_prices/DE-LU_electricity_prices_2023.csv")
ONE = Pue(1.0, "test")


def trace_file(tmp_path: Path, prices: list[float], skip: tuple[int, ...] = ()) -> Path:
    rows = []
    for i, price in enumerate(prices):
        if i in skip:
            continue
        t = START + timedelta(hours=i)
        local = t.astimezone(timezone(timedelta(hours=1)))
        rows.append(f"{t.isoformat(sep=' ')},{local.isoformat(sep=' ')},{price}\n")
    path = tmp_path / "prices.csv"
    path.write_text(HEADER + "".join(rows))
    return path


def test_flat_price_times_facility_energy() -> None:
    cost = cost_of([T0, T0 + HOUR], [500.0, 500.0], 2 * KWH, FlatPrice(0.2), Pue(1.25, "test"))
    assert cost.usd == pytest.approx(2 * 1.25 * 0.2)
    assert cost.usd_per_kwh_effective == pytest.approx(0.2)
    assert cost.facility_energy_j == pytest.approx(2.5 * KWH)
    assert cost.method == "flat price × energy"
    block = cost.to_dict()
    for key in ("usd", "source", "usd_per_kwh_effective", "method", "pue", "facility_energy_kwh"):
        assert key in block
    assert "given by the user" in block["source"]


def test_an_hourly_trace_with_negative_prices_is_time_weighted(tmp_path: Path) -> None:
    trace = PriceTrace.from_csv(trace_file(tmp_path, [-20.0, 100.0, 300.0]))
    assert trace.resolution == "hourly"
    # 1 kWh used entirely in the first hour, when the market paid for consumption
    early = cost_of([T0, T0 + HOUR - 1, T0 + HOUR, T0 + 3 * HOUR], [1000, 1000, 0, 0],
                    KWH, trace, ONE)  # fmt: skip
    assert early.usd == pytest.approx(-0.020, rel=1e-3)
    assert early.usd_per_kwh_effective == pytest.approx(-0.020, rel=1e-3)
    assert early.method == "time-weighted, hourly prices"
    # the same energy spread over the three hours pays the mean price
    even = cost_of([], [], KWH, trace, ONE, start_s=T0, end_s=T0 + 3 * HOUR)
    assert even.usd == pytest.approx((-20 + 100 + 300) / 3 / 1000)
    assert "spread evenly" in even.method


def test_the_shared_de_lu_trace_loads_with_its_negative_hours() -> None:
    if not SHARED_PRICES.exists():
        pytest.skip(f"{SHARED_PRICES} not on this machine")
    trace = PriceTrace.from_csv(SHARED_PRICES)
    assert len(trace.series.times_s) == 8760
    assert not trace.gaps
    assert (trace.series.values < 0).sum() > 100
    assert trace.series.covers(T0, T0 + 364 * 86400)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("2023-01-01 02:00:00+00:00,x,abc\n", "malformed price 'abc'"),
        ("2023-13-01 02:00:00+00:00,x,5\n", "malformed time"),
        ("2023-01-01 02:00:00+00:00\n", "expected 3 columns"),
        ("2023-01-01 00:30:00+00:00,x,5\n", "not after the row before"),
        ("2023-01-01 02:00:00+00:00,x,nan\n", "malformed price 'nan'"),
    ],
)
def test_a_malformed_row_is_named_by_file_and_line(tmp_path: Path, row: str, message: str) -> None:
    path = trace_file(tmp_path, [10.0, 20.0])
    path.write_text(path.read_text() + row)
    with pytest.raises(ConfigError, match=message) as err:
        PriceTrace.from_csv(path)
    assert f"{path}:4:" in str(err.value)


def test_a_file_without_the_columns_or_rows_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,price\n2023-01-01T00:00Z,5\n")
    with pytest.raises(ConfigError, match=r"bad\.csv:1: expected the columns"):
        PriceTrace.from_csv(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text(HEADER)
    with pytest.raises(ConfigError, match="no prices"):
        PriceTrace.from_csv(empty)
    with pytest.raises(ConfigError, match="cannot read"):
        PriceTrace.from_csv(tmp_path / "missing.csv")


def test_a_gap_in_the_trace_is_an_error_only_for_runs_inside_it(tmp_path: Path) -> None:
    path = trace_file(tmp_path, [10.0, 20.0, 30.0, 40.0, 50.0], skip=(2, 3))
    trace = PriceTrace.from_csv(path)
    inside = T0 + 2.5 * HOUR
    with pytest.raises(ConfigError) as err:
        cost_of([], [], KWH, trace, ONE, start_s=inside, end_s=inside + 60)
    text = str(err.value)
    assert "2023-01-01 02:00 UTC to 2023-01-01 04:00 UTC" in text
    assert "line 4" in text  # the row after the gap
    before = cost_of([], [], KWH, trace, ONE, start_s=T0 + 60, end_s=T0 + 120)
    assert before.usd == pytest.approx(0.010)


def test_a_run_outside_the_trace_names_both_spans(tmp_path: Path) -> None:
    trace = PriceTrace.from_csv(trace_file(tmp_path, [10.0, 20.0]))
    later = T0 + 86400
    with pytest.raises(ConfigError, match="covers 2023-01-01 00:00 UTC to 2023-01-01 02:00 UTC"):
        cost_of([], [], KWH, trace, ONE, start_s=later, end_s=later + 60)


def test_flat_price_is_checked() -> None:
    with pytest.raises(ConfigError):
        FlatPrice(float("nan"))
    with pytest.raises(ConfigError):
        FlatPrice(1000.0)


# ------------------------------------------------------------------ instance prices


def test_packaged_instances_have_prices_sources_and_dates() -> None:
    p4d = instance_price("p4d.24xlarge")
    assert (p4d.provider, p4d.region) == ("aws", "us-east-1")
    assert p4d.usd_per_h == pytest.approx(32.7726)
    assert p4d.date and p4d.source
    assert p4d.cost_usd(2 * HOUR) == pytest.approx(2 * 32.7726)
    for name in ("p5.48xlarge", "g5.xlarge", "a2-highgpu-1g", "a3-highgpu-8g"):
        assert instance_price(name).usd_per_h > 0
    root = Path(__file__).resolve().parents[2]
    rows = load_table(root / "src/greenml/data/instance_prices.csv")
    assert len(rows) >= 12
    assert all(r.on_demand_usd_per_h and r.source and r.date for r in rows)


def test_lookup_ignores_case_azure_prefix_and_takes_provider_prefix() -> None:
    nd = instance_price("nd96asr_v4")
    assert nd.provider == "azure" and nd.instance_type == "Standard_ND96asr_v4"
    assert instance_price("aws:G5.XLARGE").instance_type == "g5.xlarge"
    with pytest.raises(ConfigError, match="for gcp"):
        instance_price("g5.xlarge", provider="gcp")


def test_unknown_instance_suggests_close_names() -> None:
    with pytest.raises(ConfigError, match=r"did you mean p4d\.24xlarge"):
        instance_price("p4d.24xlarg")


def test_spot_needs_a_spot_price(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no spot price"):
        instance_price("p4d.24xlarge", spot=True)
    assert instance_price("g6e.xlarge", spot=True).usd_per_h == pytest.approx(0.7945)
    table = tmp_path / "mine.csv"
    table.write_text(
        "provider,instance_type,region,on_demand_usd_per_h,spot_usd_per_h,source,date\n"
        "aws,p4d.24xlarge,us-west-2,30.0,9.5,my invoice,2025-03\n"
        "gcp,my-box,us-central1,1.0,,me,2025-03\n"
        "aws,my-box,us-east-1,2.0,,me,2025-03\n"
    )
    mine = instance_price("p4d.24xlarge", spot=True, table=table)
    assert mine.usd_per_h == pytest.approx(9.5)
    assert mine.table == str(table) and mine.source == "my invoice"
    assert mine.to_dict(HOUR)["pricing"] == "spot"
    with pytest.raises(ConfigError, match="give the provider"):
        instance_price("my-box", table=table)
    assert instance_price("gcp:my-box", table=table).usd_per_h == 1.0


def test_a_malformed_user_table_is_named_by_file_and_line(tmp_path: Path) -> None:
    table = tmp_path / "bad.csv"
    table.write_text(
        "provider,instance_type,region,on_demand_usd_per_h,spot_usd_per_h,source,date\n"
        "aws,x1,us-east-1,cheap,,me,2025\n"
    )
    with pytest.raises(ConfigError, match=rf"{table}:2: malformed price 'cheap'"):
        instance_price("x1", table=table)
    table.write_text("provider,instance_type\naws,x1\n")
    with pytest.raises(ConfigError, match="missing columns"):
        instance_price("x1", table=table)
