"""``greenml plan replay`` in-process: JSON keys, the table, and one-line errors."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from greenml.cli import main

SHARED = Path(__file__).parents[3].parent / "shared" / "data" / "carbon_intensity"
GB_2022 = SHARED / "GB_2022_hourly.csv"
needs_shared = pytest.mark.skipif(not GB_2022.exists(), reason=f"no shared data at {SHARED}")


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """Eight weeks of hourly values with a daily dip, as ``Time,Carbon Intensity``."""
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    rng = np.random.default_rng(0)
    rows = []
    for h in range(24 * 7 * 8):
        dip = 150 * max(0.0, np.sin((h % 24 - 6) / 12 * np.pi))
        value = 400 - dip + rng.normal(0, 10)
        rows.append(f"{(t0 + timedelta(hours=h)).isoformat()},{value:.2f}")
    path = tmp_path / "trace.csv"
    path.write_text("Time,Carbon Intensity\n" + "\n".join(rows) + "\n")
    return path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "replay", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_documented_keys(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(
        capsys, "--intensity-trace", str(trace), "--scenario", "ml-jobs", "--jobs", "300",
        "--interruptible", "--error", "0.05", "--seed", "3", "--json",
    )  # fmt: skip
    assert code == 0, err
    data = json.loads(out)
    assert list(data)[:4] == ["savings_pct", "baseline_g", "shifted_g", "jobs"]
    assert data["jobs"] + data["jobs_left_out"] == 300
    assert data["shifted_g"] < data["baseline_g"]
    assert data["savings_pct"] == pytest.approx(
        100 * (data["baseline_g"] - data["shifted_g"]) / data["baseline_g"]
    )
    assert data["deadline"] == "next-workday" and data["repetitions"] == 10
    assert "noise" in data["method"] and data["tz"] == "UTC"


def test_nightly_json_lists_every_window(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--intensity-trace", str(trace), "--scenario", "nightly", "--json")
    assert code == 0
    data = json.loads(out)
    assert [w["window_hours"] for w in data["windows"]] == list(range(9))
    assert data["savings_pct"] == data["windows"][-1]["savings_pct"] > 0
    code, out, _ = cli(
        capsys, "--intensity-trace", str(trace), "--scenario", "nightly", "--window-hours", "3",
        "--json",
    )  # fmt: skip
    assert json.loads(out)["window_hours"] == 3


def test_text_output_is_a_table_with_provenance(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(
        capsys, "--intensity-trace", str(trace), "--scenario", "nightly", "--tz", "Europe/Paris"
    )
    assert code == 0
    for text in ("±0 h", "±8 h", "saving", "baseline", "perfect forecast", "Europe/Paris"):
        assert text in out
    assert "1000 W" in out
    code, out, _ = cli(
        capsys, "--intensity-trace", str(trace), "--scenario", "ml-jobs", "--jobs", "200",
        "--deadline", "semi-weekly", "--error", "0.1",
    )  # fmt: skip
    assert code == 0
    assert "deadline semi-weekly" in out and "lowest–highest" in out and "[" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--intensity-trace", "{missing}", "--scenario", "nightly"], "does not exist"),
        (["--intensity-trace", "{empty}", "--scenario", "nightly"], "empty trace file"),
        (["--intensity-trace", "{trace}", "--scenario", "weekly"], "'weekly' is not one of"),
        (["--intensity-trace", "{trace}", "--scenario", "ml-jobs", "--deadline", "soon"],
         "'soon' is not"),
        (["--intensity-trace", "{trace}", "--scenario", "ml-jobs", "--error", "-0.05"],
         "--error must be"),
        (["--intensity-trace", "{trace}", "--scenario", "nightly", "--deadline", "semi-weekly"],
         "applies"),
        (["--intensity-trace", "{short}", "--scenario", "ml-jobs"], "no ml-jobs job fits"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "short.csv").write_text(
        "Time,Carbon Intensity\n2024-01-01T00:00Z,100\n2024-01-01T01:00Z,120\n"
    )
    files = {
        "missing": str(tmp_path / "nope.csv"),
        "empty": str(tmp_path / "empty.csv"),
        "short": str(tmp_path / "short.csv"),
        "trace": str(trace),
    }
    code, out, err = cli(capsys, *[a.format(**files) for a in args])
    assert code == 2
    assert out == ""
    assert err.startswith("greenml: error: ") and message in err
    assert err.count("\n") == 1


@needs_shared
def test_real_export_replays(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(
        capsys, "--intensity-trace", str(GB_2022), "--scenario", "ml-jobs", "--interruptible",
        "--deadline", "semi-weekly", "--tz", "Europe/London", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["jobs"] > 3300 and data["savings_pct"] > 0
    assert "Electricity Maps" in data["source"]


def test_the_old_trace_option_still_works_and_says_the_new_one(
    trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "--trace", str(trace), "--scenario", "nightly", "--json")
    assert code == 0, err
    assert err == "greenml: --trace is now --intensity-trace\n"
    assert json.loads(out)["scenario"] == "nightly"
