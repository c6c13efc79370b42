"""`greenml run`, its options object and `greenml.Run` default to the same CPU scope (issue 31:
the same script once gave 984 J under one and 559 J under the other)."""

from __future__ import annotations

import dataclasses
import inspect

import click

import greenml
from greenml.run.runner import RunOptions
from greenml.run.session import DEFAULT_CPU_SCOPE


def test_every_entry_point_defaults_to_the_session_scope() -> None:
    from greenml.cli.run import run as run_command

    assert isinstance(run_command, click.Command)
    option = next(p for p in run_command.params if p.name == "cpu_scope")
    fields = {f.name: f.default for f in dataclasses.fields(RunOptions)}
    api = inspect.signature(greenml.Run).parameters["cpu_scope"].default
    assert option.default == fields["cpu_scope"] == api == DEFAULT_CPU_SCOPE == "process"
