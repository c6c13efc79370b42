"""``greenml plan spot`` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from greenml.cli import main

BASE = ["plan", "spot", "--work", "24h", "--checkpoint-cost", "5m", "--start", "2026-11-23T00:00Z"]


def test_json_plan_with_defaults_for_the_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*BASE, "--gpu", "A100", "--spot-price", "1.2", "--on-demand-price", "4.1",
                 "--deadline", "+30h", "--trials", "300", "--json"])  # fmt: skip
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["interruptions_per_hour"] == pytest.approx(0.023)
    assert plan["weekend_factor"] == pytest.approx(0.6)
    assert "default for A100" in plan["rate_source"]
    strategies = {s["strategy"]: s for s in plan["strategies"]}
    assert set(strategies) == {"spot", "hybrid", "on-demand"}
    assert plan["recommended"] == "spot"
    assert strategies["on-demand"]["mean_cost_usd"] == pytest.approx(24 * 4.1)
    assert strategies["spot"]["cost_p90_usd"] >= strategies["spot"]["cost_p50_usd"]


def test_text_output_names_the_recommendation(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*BASE, "--interruption-rate", "10%", "--spot-price", "1", "--on-demand-price",
                 "3", "--deadline", "+26h", "--trials", "300"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "Recommended: hybrid" in out
    assert "Daly" in out and "given (--interruption-rate)" in out


def test_emit_skypilot_and_slurm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = tmp_path / "task.yaml"
    code = main([*BASE, "--gpu", "H100", "--spot-price", "3", "--on-demand-price", "9",
                 "--trials", "100", "--emit", "skypilot", "-o", str(task), "--region",
                 "aws/us-east-1", "--region", "gcp/us-central1", "--accelerators", "H100:8",
                 "--checkpoint-bucket", "gs://ckpts"])  # fmt: skip
    assert code == 0
    loaded = yaml.safe_load(task.read_text())
    assert loaded["resources"]["use_spot"] is True
    assert loaded["file_mounts"]["/checkpoints"]["store"] == "gcs"
    assert loaded["resources"]["job_recovery"]["recover_on_exit_codes"] == [75]
    header = tmp_path / "job.sbatch"
    code = main([*BASE, "--gpu", "H100", "--spot-price", "3", "--on-demand-price", "9",
                 "--trials", "100", "--emit", "slurm", "-o", str(header)])  # fmt: skip
    assert code == 0
    assert "#SBATCH --begin=" in header.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "T4", "--spot-price", "1", "--on-demand-price", "3"], "known: A100, H100, V100"),
        (["--gpu", "A100", "--on-demand-price", "3"], "does not guess one"),
        (["--spot-price", "1", "--on-demand-price", "3"], "give the interruption rate"),
        (["--gpu", "A100", "--spot-price", "1", "--on-demand-price", "3", "--deadline", "+2h"],
         "earliest feasible deadline"),
        (["--gpu", "A100", "--spot-price", "1", "--on-demand-price", "3", "--emit", "slurm"],
         "--emit needs -o FILE"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
