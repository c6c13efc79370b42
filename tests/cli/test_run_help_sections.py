"""``greenml run --help`` in sections: every option shown once, under its heading."""

from __future__ import annotations

import re

import click
from click.testing import CliRunner

from greenml.cli.help_sections import OTHER, SectionedCommand
from greenml.cli.run import RUN_HELP_SECTIONS, run


def test_run_help_groups_every_option_once_and_leaves_none_to_other() -> None:
    text = CliRunner().invoke(run, ["--help"]).output
    headings = [h for h, _ in RUN_HELP_SECTIONS]
    found = [line[:-1] for line in text.splitlines() if line.endswith(":") and line[:1] != " "]
    assert found == headings and OTHER not in text
    ctx = click.Context(run)
    shown = [p for p in run.get_params(ctx)
             if isinstance(p, click.Option) and p.get_help_record(ctx) is not None]  # fmt: skip
    for param in shown:
        longest = max(param.opts, key=len)
        pattern = rf"^  (?:-\w, )?{re.escape(longest)}(?=\s)"
        assert len(re.findall(pattern, text, re.M)) == 1, longest


def test_an_option_no_section_names_is_shown_under_other() -> None:
    @click.command(cls=SectionedCommand, sections=[("Main", ["--a"])])
    @click.option("--a", help="first")
    @click.option("--b", help="forgotten by the sections")
    def cmd(a: str, b: str) -> None:
        pass

    text = CliRunner().invoke(cmd, ["--help"]).output
    assert text.index("Main:") < text.index("--a") < text.index(f"{OTHER}:") < text.index("--b")
