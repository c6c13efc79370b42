"""``greenml plan job`` as a user runs it: real traces, JSON and text, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.cli import main

SHARED = Path(__file__).parents[2].parent / "shared" / "data"
CI_DIR = SHARED / "carbon_intensity"
DE = CI_DIR / "DE-LU_2023_hourly.csv"
GB = CI_DIR / "GB_2023_hourly.csv"
DE_PRICES = SHARED / "electricity_prices" / "DE-LU_electricity_prices_2023.csv"
needs_shared = pytest.mark.skipif(not DE.exists(), reason=f"no shared data at {SHARED}")
WINDOW = ["--now", "2023-06-01T00:00Z", "--deadline", "2023-06-02T00:00Z"]


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "job", *args])
    out, err = capsys.readouterr()
    return code, out, err


@needs_shared
def test_json_plan_from_two_zones_history(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--duration", "4h", *WINDOW, "--zone", "DE-LU", "--zone", "GB",
        "--intensity-trace", f"DE-LU={DE}", "--intensity-trace", f"GB={GB}",
        "--power-w", "300", "--json",
    )  # fmt: skip
    assert code == 0, err
    plan = json.loads(out)
    chunk = plan["chunks"][0]
    assert chunk["start"] >= "2023-06-01T00:00:00Z"
    assert chunk["end"] <= "2023-06-02T00:00:00Z"
    assert chunk["duration_s"] == 14400.0
    assert plan["baseline_location"] == "DE-LU"
    assert plan["location"] in ("DE-LU", "GB")
    assert plan["saving_pct"] > 0
    low, high = plan["saving_pct_interval"]
    assert low < plan["saving_pct"] < high
    assert plan["expected_g"] == pytest.approx(1.2 * plan["mean_intensity_g_per_kwh"])
    assert "seasonal forecaster" in plan["forecast_source"]
    assert "2023-05-31" in plan["forecast_source"]  # history stops at --now
    assert {o["location"] for o in plan["options"]} == {"DE-LU", "GB"}


@needs_shared
def test_text_plan_interruptible_with_prices_and_a_cost_cap(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(
        capsys, "--duration", "4h", "--now", "2023-06-01T00:00Z", "--deadline",
        "2023-06-03T00:00Z", "--zone", "DE-LU", "--intensity-trace", str(DE),
        "--trace-as-forecast", "--interruptible", "--min-chunk", "1h", "--max-pieces", "3",
        "--price-trace", str(DE_PRICES), "--power-w", "300", "--max-cost-increase", "10%",
    )  # fmt: skip
    assert code == 0, err
    for text in ("plan: run 4:00:00 in DE-LU", "least carbon with cost ≤ baseline + 10 %",
                 "intensity:", "saving:", "emissions:", "cost: $", "values taken as known",
                 "uncertainty: none"):  # fmt: skip
        assert text in out, text


@needs_shared
def test_old_history_is_projected_and_its_age_said(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--duration", "2h", "--earliest-start", "2024-03-01T00:00Z",
        "--deadline", "2024-03-02T00:00Z", "--zone", "DE-LU", "--intensity-trace", str(DE),
    )  # fmt: skip
    assert code == 0, err
    assert "history ends 2024-01-01" in out and "60 days before now" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--duration", "4h", "--now", "2023-06-01T00:00Z", "--deadline",
          "2023-06-01T03:00Z", "--zone", "DE"],
         "the earliest feasible deadline is 2023-06-01T04:00Z"),
        (["--duration", "0h", "--deadline", "2030-01-01T00:00Z", "--zone", "DE"],
         "--duration must be a positive duration"),
        (["--duration=-2h", "--deadline", "2030-01-01T00:00Z", "--zone", "DE"],
         "--duration must be a positive duration"),
        (["--duration", "4h", "--deadline", "2030-01-01T00:00Z"], "no candidate location"),
        (["--duration", "4h", "--deadline", "2030-01-01T00:00Z", "--zone", "XX-YY"],
         "unknown grid zone 'XX-YY'; closest known:"),
        (["--duration", "4h", "--deadline", "2030-01-01T00:00Z", "--zone", "DE",
          "--allow", "FR"], "no candidate is allowed"),
        (["--duration", "4h", "--deadline", "2030-01-01T00:00", "--zone", "DE"],
         "has no time zone"),
        (["--duration", "4h", "--deadline", "2030-01-01T00:00Z", "--zone", "DE",
          "--max-pieces", "many"], "Invalid value for '--max-pieces'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run(capsys, *args)
    assert code == 2
    assert out == ""
    assert err.startswith("greenml: error: ") and err.count("\n") == 1
    assert message in err


@needs_shared
def test_trace_that_does_not_cover_the_window_names_the_span(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(
        capsys, "--duration", "4h", "--now", "2023-12-31T00:00Z", "--deadline",
        "2024-01-02T00:00Z", "--zone", "DE-LU", "--intensity-trace", str(DE),
        "--trace-as-forecast",
    )  # fmt: skip
    assert code == 2
    assert "no data for 2024-01-01 00:00 to 2024-01-02 00:00 UTC" in err
    code, _, err = run(
        capsys, "--duration", "4h", "--now", "2023-01-01T12:00Z", "--deadline",
        "2023-01-02T12:00Z", "--zone", "DE-LU", "--intensity-trace", str(DE),
    )  # fmt: skip
    assert code == 2  # 12 hours: too little even for the zone's typical profile
    assert "needs 42 days of history before now" in err
    assert "no data for 2022-11-20 12:00 UTC to 2023-01-01 00:00 UTC" in err
    assert "a day would do for DE-LU's typical profile" in err


def test_help_lists_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for option in ("--duration", "--deadline", "--now", "--zone", "--region", "--allow",
                   "--intensity-trace", "--price-trace", "--interruptible", "--min-chunk",
                   "--max-pieces", "--carbon-weight", "--max-cost-increase", "--json"):  # fmt: skip
        assert option in out


def test_the_old_provider_option_still_works_and_says_the_new_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--duration", "2h", "--deadline", "+12h", "--zone", "DE", "--json"]
    code, new, err = run(capsys, *args, "--intensity-provider", "static")
    assert (code, err) == (0, "")
    code, old, err = run(capsys, *args, "--provider", "static")
    assert code == 0 and err == "greenml: --provider is now --intensity-provider\n"
    assert json.loads(old)["forecast_source"] == json.loads(new)["forecast_source"]
    code, _, err = run(capsys, *args, "--intensity-provider", "tomorrowsweather")
    assert code == 2 and "'tomorrowsweather' is not one of 'static'" in err
