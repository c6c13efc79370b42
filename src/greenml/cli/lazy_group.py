"""Groups whose subcommands are imported on first use (click's documented pattern).

Each group names its commands as ``"module:attribute"`` strings; this module
imports none of them itself, so a group module and the commands it lists never
import each other in a circle.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any, ClassVar

import click

__all__ = ["LazyGroup", "command_path", "moved_command", "set_root"]

_ROOT: list[click.Group] = []  # the ``greenml`` group, registered by greenml.cli.app


def set_root(root: click.Group) -> None:
    """Register the group that moved commands' new paths start from."""
    _ROOT[:] = [root]


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use (from ``commands_map``).

    ``moved_map`` names old spellings: hidden commands that run the command's new
    home (a path under ``greenml``) after one line on stderr saying where it went.
    """

    commands_map: ClassVar[dict[str, str]] = {}
    moved_map: ClassVar[dict[str, str]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *self.commands_map, *self.moved_map]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.moved_map:
            return moved_command(ctx, self.moved_map[cmd_name])
        target = self.commands_map.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = target.partition(":")
        command: Any = getattr(importlib.import_module(module), attribute)
        return command  # type: ignore[no-any-return]

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if name in self.moved_map and not ctx.resilient_parsing:
            old = " ".join([*command_path(ctx), name])
            click.echo(f"greenml: `{old}` is now `greenml {self.moved_map[name]}`", err=True)
        return name, command, rest


def command_path(ctx: click.Context) -> list[str]:
    """``["greenml", "gpu"]`` for the context of ``greenml gpu`` (whatever the program name)."""
    names: list[str] = []
    while ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return ["greenml", *names]


def moved_command(ctx: click.Context, path: str) -> click.Command:
    """The command at ``path`` (e.g. ``optimize sweep``), as a hidden copy for its old name."""
    command: click.Command | None = _ROOT[0] if _ROOT else ctx.find_root().command
    for part in path.split():
        assert isinstance(command, click.Group), path
        command = command.get_command(ctx, part)
    assert command is not None, path
    alias = copy.copy(command)
    alias.hidden = True
    return alias
