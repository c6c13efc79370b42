"""``greenml gpu``: GPU power limits and clocks on this machine (see, set, lock, restore).

NVIDIA GPUs go through NVML, AMD GPUs through AMD SMI (power caps, performance levels).

The optimizer's plan and the straggler simulation moved to ``greenml optimize``;
their old spellings stay as hidden aliases.
"""

from __future__ import annotations

from typing import ClassVar

import click

from greenml.cli import render
from greenml.cli.lazy_group import LazyGroup
from greenml.cli.options import gpu_renamed, gpus_option, gpus_to_act_on, json_option
from greenml.store.export import json_text

_state_option = click.option(
    "--state-file", type=click.Path(dir_okay=False), metavar="PATH",
    help="File of original limits  [default: $GREENML_GPU_STATE or the per-user state folder]",
)  # fmt: skip


_AGENT_HELD = (
    "set through the {source}: it keeps the originals and puts them back when your job "
    "ends; `greenml gpu restore` does it now"
)


class _GpuGroup(LazyGroup):
    commands_map: ClassVar[dict[str, str]] = {}
    moved_map: ClassVar[dict[str, str]] = {
        "power-plan": "optimize power-plan",
        "straggler-sim": "optimize straggler-sim",
    }


@click.group(cls=_GpuGroup, no_args_is_help=True)
def gpu() -> None:
    """GPU power limits and clocks on this machine: allowed ranges, set, lock and restore."""


@gpu.command("limits")
@gpus_option
@gpu_renamed
@json_option()
def limits(gpus: str | None, as_json: bool) -> None:
    """Each GPU's power limit now, its default and the allowed range (NVML or AMD SMI)."""
    from greenml.optimize.power_limit import open_power_control

    control = open_power_control(gpus_to_act_on(gpus))
    try:
        rows = control.limits()
    finally:
        control.close()
    source = getattr(control, "source", None) or (
        "AMD SMI" if getattr(control, "vendor", "nvidia") == "amd" else "NVML"
    )
    if as_json:
        print(json_text({"source": source, "gpus": [g.to_dict() for g in rows]}, indent=2))
        return
    render.console().print(render.gpu_limits_table(rows))


@gpu.command("set-limit")
@click.argument("watts", type=float)
@gpus_option
@gpu_renamed
@_state_option
@click.option("--dry-run", is_flag=True, help="Show what would be set; set nothing.")
@json_option()
def set_limit(
    watts: float, gpus: str | None, state_file: str | None, dry_run: bool, as_json: bool
) -> None:
    """Set a power limit of WATTS; the originals are saved for `greenml gpu restore`."""
    from greenml.optimize.gpu_control import check_limit
    from greenml.optimize.power_limit import open_power_control

    control = open_power_control(gpus_to_act_on(gpus), state_file=state_file, hold="job",
                                 why="greenml gpu set-limit")  # fmt: skip
    try:
        before = control.limits()
        for g in before:
            check_limit(g, watts)
        if not dry_run:
            for g in before:
                control.set_limit(g.key, watts)
    finally:
        control.close()
    changes = [{"gpu": g.key, "uuid": g.uuid, "from_w": g.limit_w, "to_w": watts} for g in before]
    if as_json:
        out = {"dry_run": dry_run, "state_file": str(control.state_file), "changes": changes}
        print(json_text(out, indent=2))
        return
    console = render.console()
    verb = "would set" if dry_run else "set"
    for g in before:
        console.print(f"{g.key} {g.name}: {verb} {g.limit_w:g} W → {watts:g} W", highlight=False)
    if dry_run:
        console.print("dry run: nothing was set", highlight=False)
    elif getattr(control, "source", None):
        console.print(_AGENT_HELD.format(source=getattr(control, "source", "")), highlight=False,
                      markup=False)  # fmt: skip
    else:
        console.print(
            f"originals saved in {control.state_file}; `greenml gpu restore` puts them back",
            highlight=False, markup=False,
        )  # fmt: skip


@gpu.command("restore")
@_state_option
@json_option()
def restore(state_file: str | None, as_json: bool) -> None:
    """Put back the original limits and clocks saved in the state files (e.g. after a crash).

    A user who is not root, on a node with a greenml agent, asks the agent to put back
    what it changed for the user's job.
    """
    from greenml.agent.client import use_agent_for_control
    from greenml.optimize.gpu_clocks import restore_clocks_from_state

    socket = use_agent_for_control() if state_file is None else None
    if socket is not None:
        _restore_through_agent(socket, as_json)
        return
    from greenml.optimize.gpu_restore import restore_from_state

    result = restore_from_state(state_file)
    clocks, clocks_missing = restore_clocks_from_state()
    if as_json:
        out = {**result.to_dict(), "clocks": {"restored": clocks, "missing": clocks_missing}}
        print(json_text(out, indent=2))
        return
    console = render.console()
    if not (result.restored or result.missing or clocks or clocks_missing):
        console.print(f"nothing to restore: no saved limits in {result.state_file}",
                      highlight=False, markup=False)  # fmt: skip
        return
    for uuid, watts in result.restored.items():
        console.print(f"{uuid}: restored to {watts:g} W", highlight=False)
    for uuid, original in clocks.items():
        console.print(f"{uuid}: clocks restored ({original})", highlight=False, markup=False)
    for uuid in [*result.missing, *clocks_missing]:
        console.print(
            f"{uuid}: not on this machine; kept in {result.state_file}", highlight=False,
            markup=False,
        )  # fmt: skip


@gpu.command("clocks")
@gpus_option
@json_option()
def clocks(gpus: str | None, as_json: bool) -> None:
    """Each GPU's supported graphics clocks and the clock now (NVML or AMD SMI)."""
    from greenml.agent.control import open_clocks

    control = open_clocks(gpus_to_act_on(gpus))
    try:
        rows = control.clocks()
    finally:
        control.close()
    if as_json:
        print(json_text({"vendor": control.vendor, "gpus": [g.to_dict() for g in rows]}, indent=2))
        return
    console = render.console()
    for g in rows:
        now = "?" if g.current_mhz is None else f"{g.current_mhz:g}"
        console.print(
            f"{g.key} {g.name}: {g.min_mhz}–{g.max_mhz} MHz ({len(g.supported_mhz)} clocks), "
            f"now {now} MHz", highlight=False, markup=False,
        )  # fmt: skip


@gpu.command("lock-clocks")
@click.argument("mhz", type=float)
@gpus_option
@click.option("--dry-run", is_flag=True, help="Show the clock that would be locked; lock nothing.")
@json_option()
def lock_clocks(mhz: float, gpus: str | None, dry_run: bool, as_json: bool) -> None:
    """Lock the graphics clock at MHZ (or the supported clock below); `gpu restore` unlocks.

    NVIDIA: NVML locked clocks (Volta and newer). AMD: performance determinism mode,
    which caps the graphics clock. Needs root; the original state is saved first.
    """
    from greenml.agent.control import open_clocks

    control = open_clocks(gpus_to_act_on(gpus), hold="job", why="greenml gpu lock-clocks")
    try:
        rows = control.clocks()
        targets = {g.key: g.nearest(mhz) for g in rows}
        if not dry_run:
            control.check_permission()
            for g in rows:
                control.lock(g.key, mhz)
    finally:
        control.close()
    changes = [{"gpu": g.key, "uuid": g.uuid, "to_mhz": targets[g.key]} for g in rows]
    if as_json:
        print(json_text({"dry_run": dry_run, "state_file": str(control.state_file),
                         "changes": changes}, indent=2))  # fmt: skip
        return
    console = render.console()
    verb = "would lock" if dry_run else "locked"
    for g in rows:
        console.print(f"{g.key} {g.name}: {verb} at {targets[g.key]} MHz", highlight=False)
    if not dry_run and getattr(control, "source", None):
        console.print(_AGENT_HELD.format(source=getattr(control, "source", "")), highlight=False,
                      markup=False)  # fmt: skip
    elif not dry_run:
        console.print(f"originals saved in {control.state_file}; `greenml gpu restore` unlocks",
                      highlight=False, markup=False)  # fmt: skip


def _restore_through_agent(socket: object, as_json: bool) -> None:
    from greenml.agent.client import AgentClient

    with AgentClient(str(socket)) as client:
        result = client.request("restore", why="greenml gpu restore")
    if as_json:
        print(json_text({"agent": str(socket), **result}, indent=2))
        return
    console = render.console()
    if not result["restored"]:
        console.print(f"nothing to restore: the greenml agent at {socket} holds no change of "
                      "yours", highlight=False, markup=False)  # fmt: skip
    for u in result["restored"]:
        unit = " W" if u["what"] == "power_limit" else " MHz"
        console.print(f"{u['gpu']}: {u['what'].replace('_', ' ')} restored "
                      f"{_shown(u['from'], unit)} → {_shown(u['to'], unit)} (greenml agent)",
                      highlight=False, markup=False)  # fmt: skip


def _shown(value: object, unit: str) -> str:
    """A number with its unit (``990 MHz``), anything else as it is (``unlocked``)."""
    return f"{value:g}{unit}" if isinstance(value, int | float) else str(value)
