"""Every registered command and subcommand imports and shows its help; moved commands
keep their old spelling as a hidden alias; ``greenml run`` imports no other command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from greenml.cli import main
from greenml.cli.advise import ADVISE_COMMANDS
from greenml.cli.app import COMMANDS, MOVED
from greenml.cli.optimize import OPTIMIZE_COMMANDS
from greenml.cli.plan import PLAN_COMMANDS

GROUPS = (
    [("plan", name) for name in sorted(PLAN_COMMANDS)]
    + [("optimize", name) for name in sorted(OPTIMIZE_COMMANDS)]
    + [("advise", name) for name in sorted(ADVISE_COMMANDS)]
    + [("label", "bench")]
)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([name, "--help"]) == 0
    assert "Usage: greenml " + name in capsys.readouterr().out


@pytest.mark.parametrize(("group", "name"), GROUPS)
def test_subcommand_help(group: str, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([group, name, "--help"]) == 0
    assert f"Usage: greenml {group} {name}" in capsys.readouterr().out


def test_unknown_command_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "No such command 'bogus'" in err and err.count("\n") == 1


def test_moved_commands_are_hidden_from_the_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.split("Commands:")[1].splitlines()
              if line.strip()]  # fmt: skip
    assert listed == list(COMMANDS)
    assert not set(MOVED) & set(listed)


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_a_moved_command_says_where_it_went(
    old: str, new: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([old, "--help"]) == 0
    out, err = capsys.readouterr()
    assert err == f"greenml: `greenml {old}` is now `greenml {new}`\n"
    assert "Usage: greenml " + old in out


def test_run_imports_no_other_command() -> None:
    code = (
        "import sys\n"
        "from greenml.cli import main\n"
        "main(['run', '--help'])\n"
        "print(sorted(m for m in sys.modules if m.startswith('greenml.cli.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == ("['greenml.cli.app', 'greenml.cli.help_sections', 'greenml.cli.lazy_group', "
                      "'greenml.cli.options', 'greenml.cli.run', "
                      "'greenml.cli.run_dirty_cap']"), loaded  # run's own option group; no tables
