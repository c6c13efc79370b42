"""``greenml savings`` from the command line: the table, the report, consent, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from greenml.store import open_store
from tests.helpers import greenml_cli
from tests.savings.project import plant


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    with open_store(str(path)) as store:
        plant(store)
    return path


def test_plan_prints_a_ranked_table_and_a_report(db: Path, tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "COLUMNS": "250"}
    done = greenml_cli("savings", "plan", "--db", str(db), **env)
    assert done.returncode == 0, done.stderr
    assert "gpu-power-nvidia-a100" in done.stdout and "All items together" in done.stdout
    assert "kWh" in done.stdout and "CO2eq" in done.stdout
    md = greenml_cli("savings", "plan", "--db", str(db), "--format", "md", **env)
    assert "## Expected savings, ranked (not yet verified)" in md.stdout
    assert "## Verified savings" in md.stdout and "None yet" in md.stdout
    html = tmp_path / "plan.html"
    done = greenml_cli("savings", "plan", "--db", str(db), "--format", "html", "-o", str(html),
                       **env)  # fmt: skip
    assert done.returncode == 0 and "<table" in html.read_text()


def test_apply_needs_consent_and_never_applies_silently(db: Path, tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    greenml_cli("savings", "plan", "--db", str(db), "--format", "json", **env)
    config = tmp_path / "xdg" / "greenml" / "config.toml"
    refused = greenml_cli("savings", "apply", "gpu-power-nvidia-a100", "--db", str(db), **env)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    assert "Traceback" not in refused.stderr and not config.exists()
    done = greenml_cli("savings", "apply", "gpu-power-nvidia-a100", "--db", str(db), "--yes",
                       **env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "power_limit_w = 250.0" in config.read_text()
    unknown = greenml_cli("savings", "apply", "warp-drive", "--db", str(db), "--yes", **env)
    assert unknown.returncode == 2 and "no item 'warp-drive'" in unknown.stderr
    advice = greenml_cli("savings", "apply", "precision", "--db", str(db), "--yes", **env)
    assert advice.returncode == 2 and "advice only" in advice.stderr
    undo = greenml_cli("savings", "undo", "gpu-power-nvidia-a100", "--db", str(db), **env)
    assert undo.returncode == 0 and "power_limit_w" not in config.read_text()
    again = greenml_cli("savings", "undo", "gpu-power-nvidia-a100", "--db", str(db), **env)
    assert again.returncode == 2 and "not applied" in again.stderr


def test_bad_selections_are_one_line(db: Path) -> None:
    for args in (["--tag", "novalue"], ["--project", "nope"], ["--since", "yesterdayish"]):
        done = greenml_cli("savings", "plan", "--db", str(db), *args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_plan_is_a_report_kind(db: Path) -> None:
    done = greenml_cli("report", "--tag", "project=vision", "--kind", "savings-plan", "--db",
                       str(db), "--format", "md", "-O", "years=5")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "# Savings plan" in done.stdout and "gpu-power-nvidia-a100" in done.stdout
    assert "over 5 years" in done.stdout
