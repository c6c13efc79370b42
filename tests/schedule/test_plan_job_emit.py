"""``greenml plan job --emit``: the planned start handed to SkyPilot and Slurm."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from greenml.cli import main

WINDOW = ["--duration", "4h", "--earliest-start", "2023-03-01T00:00Z",
          "--deadline", "2023-03-02T12:00Z", "--power-w", "300"]  # fmt: skip


def test_skypilot_task_pins_the_planned_cloud_region(tmp_path: Path) -> None:
    out = tmp_path / "task.yaml"
    code = main(["plan", "job", *WINDOW, "--region", "gcp:europe-west3", "--region",
                 "gcp:europe-north1", "--emit", "skypilot", "-o", str(out), "--json"])  # fmt: skip
    assert code == 0
    task = yaml.safe_load(out.read_text())
    # europe-north1 (Finland) has the cleaner yearly grid of the two.
    assert task["resources"]["infra"] == "gcp/europe-north1"
    assert task["resources"]["use_spot"] is False
    assert out.read_text().startswith("# greenml plan job: planned start")


def test_slurm_header_begins_at_the_planned_start(tmp_path: Path) -> None:
    trace = Path(__file__).parents[2].parent / "shared/data/carbon_intensity/DE-LU_2023_hourly.csv"
    if not trace.exists():
        pytest.skip(f"no shared data at {trace}")
    out = tmp_path / "job.sbatch"
    code = main(["plan", "job", *WINDOW, "--zone", "DE-LU", "--intensity-trace",
                 f"DE-LU={trace}", "--trace-as-forecast", "--emit", "slurm", "-o", str(out),
                 "--json"])  # fmt: skip
    assert code == 0
    text = out.read_text()
    assert "#SBATCH --time=0-04:00:00" in text
    begin = next(line for line in text.splitlines() if line.startswith("#SBATCH --begin="))
    assert begin != "#SBATCH --begin=2023-03-01T00:00:00"  # shifted away from "now"


def test_skypilot_needs_a_cloud_region(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "job", *WINDOW, "--zone", "DE-LU", "--emit", "skypilot", "-o",
                 str(tmp_path / "t.yaml")])  # fmt: skip
    assert code == 2
    assert "SkyPilot needs a cloud region" in capsys.readouterr().err
