"""``greenml optimize simulate`` as a user runs it: --json keys, the tables, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.cli import main
from tests.optimize.test_zeus_trace import SHARED, write_traces

PROFILES = {
    (size, limit): (time_s * slow, power_w)
    for size, time_s in ((256, 10.0), (512, 7.0), (1024, 6.0))
    for limit, slow, power_w in ((100, 1.6, 95.0), (150, 1.15, 140.0), (200, 1.0, 170.0))
}


@pytest.fixture
def traces(tmp_path: Path) -> list[str]:
    paths = {256: [30, 36], 512: [28, 30], 1024: [70, 78]}
    train, power = write_traces(tmp_path, paths, PROFILES)  # type: ignore[arg-type]
    return ["--train-trace", str(train), "--power-trace", str(power)]


def simulate(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["optimize", "simulate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_keys_of_the_issue(
    traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*traces, "--workload", "cifar100/shufflenetv2", "--eta", "0.5", "--beta", "2"]
    code, out, _ = simulate([*args, "--recurrences", "6", "--seed", "1", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    for key in ("total_energy_j", "total_time_s", "total_cost", "history", "oracle", "baseline"):
        assert key in doc
    assert len({e["recurrence"] for e in doc["history"]}) == 6
    for entry in doc["history"]:
        assert {"batch_size", "power_limit", "energy_j", "time_s", "reached"} <= entry.keys()
    for fixed in ("oracle", "baseline"):
        assert {"batch_size", "power_limit", "energy_j", "time_s"} <= doc[fixed].keys()
    assert doc["baseline"]["batch_size"] == 1024 and doc["baseline"]["power_limit"] == 200
    assert doc["total_cost"] == pytest.approx(sum(e["cost"] for e in doc["history"]))
    assert "replayed from traces" in doc["method"]


def test_text_shows_runs_then_totals(traces: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = [*traces, "--workload", "cifar100/shufflenetv2", "--recurrences", "4"]
    code, out, _ = simulate(args, capsys)
    assert code == 0
    for text in ("runs", "(profiled)", "totals", "oracle (expected)", "baseline (expected)"):
        assert text in out, text
    assert "method: replayed from traces" in out
    args = [*traces, "--workload", "cifar100/shufflenetv2", "--recurrences", "40"]
    code, out, _ = simulate(args, capsys)
    assert code == 0
    assert "runs, per batch size" in out  # more than 30 runs: summarised
    assert "second half of the recurrences" in out


def test_unknown_workload_lists_the_present_ones(
    traces: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = simulate([*traces, "--workload", "imagenet/resnet50"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == (
        "greenml: error: workload 'imagenet/resnet50' is not in both traces; "
        "present: cifar100/shufflenetv2"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--eta", "2"], "eta must be between 0 and 1"),
        (["--recurrences", "0"], "0 is not in the range x>=1"),
        (["--beta", "1"], "beta must be greater than 1"),
    ],
)
def test_bad_options_are_one_line_errors(
    traces: list[str], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, _, err = simulate([*traces, "--workload", "cifar100/shufflenetv2", *extra], capsys)
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_missing_trace_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--train-trace", str(tmp_path / "t.csv"), "--power-trace", str(tmp_path / "p.csv")]
    code, _, err = simulate([*args, "--workload", "cifar100/shufflenetv2"], capsys)
    assert code == 2 and "cannot read the train trace" in err


@pytest.mark.skipif(not SHARED.exists(), reason="shared Zeus traces not on this machine")
def test_real_trace_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--train-trace", str(SHARED / "summary_train.csv")]
    args += ["--power-trace", str(SHARED / "summary_power_v100.csv")]
    code, out, _ = simulate([*args, "--workload", "imagenet/resnet50", "--json"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["recurrences"] == 70
    assert doc["oracle"]["batch_size"] == 360 and doc["baseline"]["batch_size"] == 256
    assert {s["batch_size"] for s in doc["skipped"]} == {8, 16, 32, 512, 1024}
