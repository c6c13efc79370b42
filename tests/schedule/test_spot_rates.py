"""Per-region spot interruption rates: the CSV, the fallback, and what the plan says."""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.schedule.spot_rates import RateTable, regional_rates

RATES = (
    "gpu,region,rate_per_hour,source\n"
    "A100,aws:us-east-1,0.092,AWS Spot Advisor 2026-11\n"
    "A100,us-central1,2%\n"
    "H100,aws/us-east-1,0.2,measured\n"
)
BASE = ["plan", "spot", "--work", "24h", "--checkpoint-cost", "5m", "--start", "2026-11-23T00:00Z",
        "--spot-price", "1", "--on-demand-price", "3", "--trials", "100"]  # fmt: skip


@pytest.fixture
def rates_csv(tmp_path: Path) -> Path:
    path = tmp_path / "rates.csv"
    path.write_text(RATES, encoding="utf-8")
    return path


def test_rows_match_by_gpu_and_region_spelled_either_way(rates_csv: Path) -> None:
    table = RateTable.from_csv(rates_csv)
    row = table.lookup("nvidia-a100-80gb", "aws/us-east-1")
    assert row is not None and row.per_hour == pytest.approx(0.092) and row.line == 2
    h100 = table.lookup("H100", "aws:us-east-1")
    assert h100 is not None and h100.per_hour == pytest.approx(0.2)
    bare = table.lookup("A100", "gcp:us-central1")  # a bare region in the file: any cloud
    assert bare is not None and bare.per_hour == pytest.approx(0.02)
    assert table.lookup("A100", "gcp:europe-north1") is None
    assert table.lookup("V100", "aws:us-east-1") is None
    assert table.lookup("A100", "azure:us-east-1") is None  # another cloud's us-east-1


def test_a_region_not_listed_falls_back_and_says_so(rates_csv: Path) -> None:
    table = RateTable.from_csv(rates_csv)
    east, north = regional_rates("A100", ["aws:us-east-1", "gcp:europe-north1"], table)
    assert east.origin == "csv" and east.per_hour == pytest.approx(0.092)
    assert "line 2" in east.source and "AWS Spot Advisor 2026-11" in east.source
    assert north.origin == "packaged default"
    assert north.per_hour == pytest.approx(0.023)
    assert f"gcp:europe-north1 is not in {rates_csv}" in north.source


def test_a_fallback_without_a_packaged_default_is_an_error(rates_csv: Path) -> None:
    table = RateTable.from_csv(rates_csv)
    with pytest.raises(ConfigError, match=r"T4 in aws:eu-west-1 is not in .*no default"):
        regional_rates("T4", ["aws:eu-west-1"], table)


def test_plan_uses_the_highest_regional_rate_and_names_every_region(
    rates_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*BASE, "--gpu", "A100", "--interruption-rates", str(rates_csv), "--region",
                 "gcp:us-central1", "--region", "aws:us-east-1", "--region",
                 "gcp:europe-north1", "--json"])  # fmt: skip
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["interruptions_per_hour"] == pytest.approx(0.092)
    assert "highest of the --region rates" in plan["rate_source"]
    assert "AWS Spot Advisor 2026-11" in plan["rate_source"]
    by_region = {r["region"]: r for r in plan["rates_by_region"]}
    assert by_region["gcp:us-central1"]["from"] == "csv"
    assert by_region["gcp:europe-north1"]["from"] == "packaged default"
    assert by_region["gcp:europe-north1"]["interruptions_per_hour"] == pytest.approx(0.023)


def test_text_output_says_which_rate_applied_and_the_fallback(
    rates_csv: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([*BASE, "--gpu", "A100", "--interruption-rates", str(rates_csv), "--region",
                 "gcp:europe-north1"])  # fmt: skip
    assert code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Interruption rate: 2.30%/h for A100 in gcp:europe-north1" in out
    assert "packaged default for A100 (A100 in gcp:europe-north1 is not in" in out


def test_default_rate_with_regions_says_it_is_the_same_everywhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*BASE, "--gpu", "A100", "--region", "aws:us-east-1", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert "the same in every region" in plan["rate_source"]
    assert plan["rates_by_region"] == []


@pytest.mark.parametrize(
    ("text", "extra", "message"),
    [
        ("gpu,rate_per_hour\nA100,0.1\n", [], "missing region"),
        ("gpu,region,rate_per_hour\nA100,x,-1\n", [], "finite number >= 0"),
        ("gpu,region,rate_per_hour\nA100,x,inf\n", [], "finite number >= 0"),
        ("gpu,region,rate_per_hour\nA100,x,\n", [], "is not a number"),
        ("gpu,region,rate_per_hour\n,x,0.1\n", [], "must not be empty"),
        ("gpu,region,rate_per_hour\nA100,aws:x,0.1\nA100,aws/x,0.2\n", [], "already on line 2"),
        ("gpu,region,rate_per_hour\n", [], "no rates"),
        (None, [], "cannot read interruption rates"),
        (RATES, ["--interruption-rate", "1%"], "not both"),
    ],
)
def test_bad_rates_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | None, extra: list[str],
    message: str,
) -> None:  # fmt: skip
    path = tmp_path / "rates.csv"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    gpu = [] if extra else ["--gpu", "A100"]
    code = main([*BASE, *gpu, *extra, "--interruption-rates", str(path), "--region", "aws:x"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err
    assert err.count("\n") == 1


def test_rates_need_a_gpu(rates_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BASE, "--interruption-rates", str(rates_csv)]) == 2
    assert "--interruption-rates needs --gpu" in capsys.readouterr().err


HEADERS = st.sampled_from(
    ["gpu,region,rate_per_hour,source\n", "GPU, Region ,rate_per_hour\n", "", "a,b\n"]
)
CELL = st.one_of(st.text(max_size=10), st.sampled_from(["A100", "aws:us-east-1", "us-east-1"]))
RATE = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-5, 500).map(lambda f: f"{f}%"),
    st.text(max_size=6),
)
ROWS = st.lists(st.tuples(CELL, CELL, RATE, st.text(max_size=8)), max_size=6)


@settings(max_examples=150, deadline=None)
@given(header=HEADERS, rows=ROWS, raw=st.binary(max_size=40))
def test_any_rates_file_reads_or_fails_with_one_line(
    header: str, rows: list[tuple[str, str, str, str]], raw: bytes
) -> None:
    text = header + "".join(f"{g},{r},{p},{s}\n" for g, r, p, s in rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rates.csv"
        path.write_bytes(text.encode("utf-8", "surrogatepass") + raw)
        try:
            table = RateTable.from_csv(path)
        except ConfigError as exc:
            assert "\n" not in str(exc) and "\r" not in str(exc)
            return
    assert table.rows
    for row in table.rows:
        assert math.isfinite(row.per_hour) and row.per_hour >= 0
        assert row.gpu.strip() and row.region.strip()
