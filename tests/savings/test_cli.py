"""``greenml savings`` from the command line: the table, the report, consent, bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from greenml.store import open_store
from tests.helpers import greenml_cli as greenml_subprocess
from tests.savings.cli_inproc import Done, run_cli
from tests.savings.project import plant


@pytest.fixture
def greenml_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> object:
    monkeypatch.setenv("COLUMNS", "250")

    def call(*argv: str) -> Done:
        return run_cli(capsys, monkeypatch, tmp_path / "xdg", *argv)

    return call


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with open_store(str(path)) as store:
        plant(store)
    return path


def test_plan_prints_a_ranked_table_and_a_report(
    db: Path, tmp_path: Path, greenml_cli: Any
) -> None:
    done = greenml_cli("savings", "plan", "--db", str(db))
    assert done.returncode == 0, done.stderr
    assert "gpu-power-nvidia-a100" in done.stdout and "All items together" in done.stdout
    assert "kWh" in done.stdout and "CO2eq" in done.stdout
    md = greenml_cli("savings", "plan", "--db", str(db), "--format", "md")
    assert "## Expected savings, ranked (not yet verified)" in md.stdout
    assert "## Verified savings" in md.stdout and "None yet" in md.stdout
    html = tmp_path / "plan.html"
    done = greenml_cli("savings", "plan", "--db", str(db), "--format", "html", "-o", str(html))
    assert done.returncode == 0 and "<table" in html.read_text()


def test_apply_needs_consent_and_never_applies_silently(
    db: Path, tmp_path: Path, greenml_cli: Any
) -> None:
    greenml_cli("savings", "plan", "--db", str(db), "--format", "json")
    config = tmp_path / "xdg" / "greenml" / "config.toml"
    refused = greenml_cli("savings", "apply", "gpu-power-nvidia-a100", "--db", str(db))
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert "Traceback" not in refused.stderr and not config.exists()
    done = greenml_cli("savings", "apply", "gpu-power-nvidia-a100", "--db", str(db), "--yes")
    assert done.returncode == 0, done.stderr
    assert "power_limit_w = 250.0" in config.read_text()
    unknown = greenml_cli("savings", "apply", "warp-drive", "--db", str(db), "--yes")
    assert unknown.returncode == 2 and "no item 'warp-drive'" in unknown.stderr
    advice = greenml_cli("savings", "apply", "precision", "--db", str(db), "--yes")
    assert advice.returncode == 2 and "advice only" in advice.stderr
    undo = greenml_cli("savings", "undo", "gpu-power-nvidia-a100", "--db", str(db))
    assert undo.returncode == 0 and "power_limit_w" not in config.read_text()
    again = greenml_cli("savings", "undo", "gpu-power-nvidia-a100", "--db", str(db))
    assert again.returncode == 2 and "not applied" in again.stderr


def test_bad_selections_are_one_line(db: Path, greenml_cli: Any) -> None:
    for args in (["--tag", "novalue"], ["--project", "nope"], ["--since", "yesterdayish"]):
        done = greenml_cli("savings", "plan", "--db", str(db), *args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_plan_is_a_report_kind(db: Path) -> None:
    done = greenml_subprocess("report", "--tag", "project=vision", "--kind", "savings-plan", "--db",
                       str(db), "--format", "md", "-O", "years=5")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "# Savings plan" in done.stdout and "gpu-power-nvidia-a100" in done.stdout
    assert "over 5 years" in done.stdout
