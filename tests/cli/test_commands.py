"""Every registered command (and every ``plan`` subcommand) imports and shows its help."""

from __future__ import annotations

import pytest

from greenml.cli import main
from greenml.cli.app import COMMANDS
from greenml.cli.plan import PLAN_COMMANDS


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([name, "--help"]) == 0
    assert "Usage: greenml " + name in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(PLAN_COMMANDS))
def test_plan_subcommand_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", name, "--help"]) == 0
    assert f"Usage: greenml plan {name}" in capsys.readouterr().out


def test_unknown_command_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'bogus'" in err and err.count("\n") == 1
