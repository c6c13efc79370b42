"""MkDocs hook: document this checkout's code, and check the CLI reference is complete.

``on_config`` puts ``src/`` first on ``sys.path`` so that mkdocs-click imports the
commands of this checkout, not of whichever greenml is installed. ``on_page_content``
checks that the generated CLI reference has one section per visible command and
sub-command (the group is lazy: commands are imported on use), and none for a
hidden alias; anything else is a warning, which fails ``mkdocs build --strict``.
It also blanks click's "no default" sentinel, which would read ``Sentinel.UNSET``.
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.hooks.cli_reference")
CLI_PAGE = "reference/cli.md"


def on_config(config: Any) -> Any:
    src = str(Path(config.config_file_path).parent / "src")
    if src not in sys.path:
        sys.path.insert(0, src)
    return config


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_uri != CLI_PAGE:
        return html
    expected = _commands()
    found = set(re.findall(r'id="(greenml(?:-[a-z0-9-]+)?)"', html))
    for missing in sorted(set(expected) - found):
        log.warning("CLI reference: no section for `%s`", expected[missing])
    for extra in sorted(found - set(expected)):
        log.warning("CLI reference: a section %r names no visible command", extra)
    # click 8.3 marks "no default" with a sentinel that mkdocs-click prints as its repr
    return html.replace("<code>Sentinel.UNSET</code>", "").replace("Sentinel.UNSET", "")


def _commands() -> dict[str, str]:
    """Every visible command by heading id: {"greenml-plan-job": "greenml plan job", ...}."""
    import click

    from greenml.cli.app import cli

    ids: dict[str, str] = {}

    def walk(command: click.Command, path: list[str], parent: click.Context | None) -> None:
        ctx = click.Context(command, info_name=path[-1], parent=parent)
        ids["-".join(path)] = " ".join(path)
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, [*path, name], ctx)

    walk(cli, ["greenml"], None)
    return ids
