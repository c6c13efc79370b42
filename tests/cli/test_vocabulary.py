"""One CLI vocabulary: an option name means the same thing in every command.

The checks walk every command and subcommand of the click tree, hidden ones
included, and fail when a conflicting spelling comes back. Each check is also
run on a small bad tree, so that a check that finds nothing is known to work.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import click
import pytest

from greenml.cli.app import cli
from greenml.cli.options import INTENSITY_PROVIDERS, RenamedOption, renamed

# Visible spellings that must not come back, and what to use instead.
BANNED = {
    "--provider": "--intensity-provider (live intensity) or --provider-name (report euaiact)",
    "--interval": "--sample-hz HZ",
    "--trace": "--intensity-trace CSV",
    "--out": "-o/--output FILE, --json-out FILE or --out-dir DIR",
    "--json-file": "--json-out FILE",
    "--output-file": "-o/--output FILE",
    "--hz": "--sample-hz HZ",
    "--candidate-zone": "--candidate-location LOC",
}

# (option, command) → why it may differ from the option's meaning elsewhere.
EXCEPTIONS = {
    ("--zone", "plan job"): "candidates to choose among: repeatable",
    ("--region", "plan job"): "candidates to choose among: repeatable",
    ("--region", "plan spot"): "the regions --emit may place the task in: repeatable",
    ("--intensity-trace", "plan job"): "one trace per candidate: repeatable [LOC=]CSV",
    ("--price-trace", "plan job"): "one price file per candidate: repeatable [LOC=]CSV",
    ("--deadline", "plan replay"): "the replay study's rule (next-workday|semi-weekly), not a time",
    ("--eta", "optimize sweep"): "a sweep advises for a comma-separated list of η values",
    ("--precision", "optimize sweep"): "a sweep measures a comma-separated list of precisions",
    ("--baseline", "check"): "the CI gate also takes run-record files (ID|FILE)",
    ("--workload", "optimize straggler-sim"): "a dataset's V100 curve, not a DATASET/NETWORK trace",
    ("--workload", "advise hardware"): "the measured run (RUN_ID) a workload is scaled from",
    ("--workload", "advise tco"): "the measured run (RUN_ID) whose GPU power is used",
}

# Options defined once in greenml/cli/options.py: the same help everywhere too.
SHARED = ("--db", "--zone", "--region", "--country", "--ci", "--pue", "--price", "--instance",
          "--intensity-trace", "--intensity-provider", "--gpus")  # fmt: skip


def walk(group: click.Command, path: str = "") -> Iterator[tuple[str, click.Command]]:
    """(``"plan job"``, command) for every command under ``group``, hidden ones included."""
    ctx = click.Context(group)
    if not isinstance(group, click.Group):
        return
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{path} {name}"
        full = f"{path} {name}".strip()
        yield full, command
        yield from walk(command, full)


def leaves(root: click.Command) -> list[tuple[str, click.Command]]:
    return [(p, c) for p, c in walk(root) if not isinstance(c, click.Group)]


def visible_leaves(root: click.Command) -> list[tuple[str, click.Command]]:
    """Leaf commands under their own name (a moved command's hidden alias is a copy)."""
    return [(p, c) for p, c in leaves(root) if not c.hidden]


def signature(option: click.Option) -> tuple[object, ...]:
    """What an option name promises: flag or not, the kind of value, repeatable, metavar."""
    kind = "flag" if option.is_flag else type(option.type).__name__
    kind = {"IntRange": "INT", "FloatRange": "FLOAT"}.get(kind, kind)
    kind = {"IntParamType": "INT", "FloatParamType": "FLOAT"}.get(kind, kind)
    return (kind, option.multiple, option.metavar)


def options_of(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option)]


def conflicts(root: click.Command) -> list[str]:
    """Visible option names that promise different things in different commands."""
    seen: dict[str, dict[tuple[object, ...], list[str]]] = defaultdict(lambda: defaultdict(list))
    for path, command in visible_leaves(root):
        for option in options_of(command):
            if option.hidden:
                continue
            for name in option.opts + option.secondary_opts:
                if (name, path) not in EXCEPTIONS:
                    seen[name][signature(option)].append(path)
    return [f"{name}: {dict(kinds)}" for name, kinds in seen.items() if len(kinds) > 1]


def json_misuse(root: click.Command) -> list[str]:
    """``--json`` that is not a flag printing JSON (parameter ``as_json``)."""
    out = []
    for path, command in visible_leaves(root):
        for option in options_of(command):
            renamed_ = isinstance(option, RenamedOption)
            as_json = option.is_flag and option.name == "as_json" and not option.hidden
            if "--json" in option.opts and not renamed_ and not as_json:
                out.append(f"{path}: --json is not the as_json flag")
    return out


def banned(root: click.Command) -> list[str]:
    return [
        f"{path}: {name} (use {BANNED[name]})"
        for path, command in visible_leaves(root)
        for option in options_of(command)
        if not option.hidden
        for name in option.opts + option.secondary_opts
        if name in BANNED
    ]


def bad_renames(root: click.Command) -> list[str]:
    """Old spellings must be hidden, point at a visible option of the same command, and not
    shadow one of its visible options."""
    out = []
    for path, command in leaves(root):
        params = {o.name: o for o in options_of(command)}
        visible = {n for o in options_of(command) if not o.hidden
                   for n in o.opts + o.secondary_opts}  # fmt: skip
        for option in options_of(command):
            if not isinstance(option, RenamedOption):
                continue
            target = params.get(option.target)
            if not option.hidden or option.expose_value:
                out.append(f"{path}: {option.opts} is not hidden")
            if target is None or target.hidden or option.new not in target.opts:
                out.append(f"{path}: {option.opts} points at no visible {option.new}")
            if set(option.opts) & visible:
                out.append(f"{path}: {option.opts} shadows a visible option")
    return out


def different_help(root: click.Command) -> list[str]:
    helps: dict[str, set[str]] = defaultdict(set)
    for path, command in visible_leaves(root):
        for option in options_of(command):
            for name in option.opts:
                if name in SHARED and (name, path) not in EXCEPTIONS and not option.hidden:
                    helps[name].add(option.help or "")
    return [f"{name}: {sorted(texts)}" for name, texts in helps.items() if len(texts) > 1]


CHECKS = [conflicts, json_misuse, banned, bad_renames, different_help]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_the_greenml_tree_keeps_one_vocabulary(check: object) -> None:
    assert callable(check)
    assert check(cli) == []


def test_the_walk_sees_every_command_hidden_ones_included() -> None:
    paths = {path: command.hidden for path, command in walk(cli)}
    for hidden in ("sweep", "wait", "gpu power-plan", "gpu straggler-sim"):
        assert paths[hidden] is True, hidden
    for shown in (
        "run",
        "optimize sweep",
        "optimize power-plan",
        "optimize straggler-sim",
        "optimize simulate",
        "plan wait",
        "plan job",
        "gpu limits",
        "serve batch-curve",
    ):
        assert paths[shown] is False, shown  # fmt: skip
    assert len(visible_leaves(cli)) >= 25


def test_every_exception_names_a_real_option() -> None:
    commands = dict(visible_leaves(cli))
    for name, path in EXCEPTIONS:
        assert any(name in o.opts for o in options_of(commands[path])), (name, path)


def test_moved_commands_run_their_new_home() -> None:
    paths = dict(walk(cli))
    moved = {"sweep": "optimize sweep", "wait": "plan wait",
             "gpu power-plan": "optimize power-plan",
             "gpu straggler-sim": "optimize straggler-sim",
             "serve batch-curve": "inference batch-curve", "audit": "report audit"}  # fmt: skip
    for old, new in moved.items():
        assert paths[old].callback is paths[new].callback, old


def test_intensity_providers_match_the_accounting_module() -> None:
    from greenml.accounting.location import PROVIDERS

    assert INTENSITY_PROVIDERS == PROVIDERS


def _bad_tree() -> click.Group:
    @click.group()
    def root() -> None:
        """A tree that breaks every rule once."""

    @root.command("a")
    @click.option("--json", "json_path", type=click.Path(), help="Write JSON here.")
    @click.option("--zone", help="Zone.")
    @click.option("--interval", type=float, help="Seconds between samples.")
    @renamed("--old", "--gone", "gone")
    def a(json_path: str, zone: str, interval: float) -> None: ...

    @root.command("b")
    @click.option("--json", "as_json", is_flag=True)
    @click.option("--zone", "zones", multiple=True, help="Zones.")
    @click.option("--provider", help="A company.")
    @click.option("--gpus", help="Which.")
    @renamed("--gpus", "--gpus", "gpus")
    def b(as_json: bool, zones: tuple[str, ...], provider: str, gpus: str) -> None: ...

    @root.command("c")
    @click.option("--gpus", help="Other help.")
    def c(gpus: str) -> None: ...

    return root


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_each_check_catches_a_reintroduced_conflict(check: object) -> None:
    assert callable(check)
    found = check(_bad_tree())
    assert found, "the check found nothing in a tree made to break it"
