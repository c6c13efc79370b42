"""Every ``GREENML_*`` variable greenml reads is declared once and documented (issue 28)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.config.settings import SETTINGS
from greenml.config.variables import VARIABLES, all_variables

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"GREENML_[A-Z0-9_]*[A-Z0-9]")


def _named_in(text: str) -> set[str]:
    return set(NAME.findall(text))


def test_every_variable_the_source_names_is_declared() -> None:
    named: dict[str, str] = {}
    for path in (ROOT / "src" / "greenml").rglob("*.py"):
        for name in _named_in(path.read_text(encoding="utf-8")):
            named.setdefault(name, str(path.relative_to(ROOT)))
    undeclared = {n: where for n, where in named.items() if n not in all_variables()}
    assert undeclared == {}


def test_each_variable_is_declared_once() -> None:
    names = [v.name for v in VARIABLES] + [s.env for s in SETTINGS if s.env]
    assert len(names) == len(set(names))


def test_the_configuration_page_lists_exactly_the_declared_variables() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = page.split("## Environment variables", 1)[1].split("Used by the test suite", 1)[0]
    listed = _named_in(section) - {"GREENML_"}
    assert listed == set(all_variables())


def test_config_variables_shows_what_is_set_and_masks_secrets(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GREENML_LEDGER_KEY", "/secret/place/key.pem")
    monkeypatch.setenv("GREENML_JOB", "j-42")
    monkeypatch.delenv("GREENML_NODE_TOKEN", raising=False)
    assert main(["config", "variables", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == set(all_variables())
    assert rows["GREENML_JOB"]["value"] == "j-42" and rows["GREENML_JOB"]["kind"] == "job"
    assert rows["GREENML_LEDGER_KEY"]["value"] == "/sec…(set)"  # a secret: masked
    assert rows["GREENML_NODE_TOKEN"]["value"] is None
    assert main(["config", "variables"]) == 0
    assert "GREENML_JOB" in capsys.readouterr().out
