"""``greenml gpu``: GPU power limits (see, plan, set, restore) and the straggler simulation."""

from __future__ import annotations

import json
from typing import Any

import click

from greenml.cli import render

_gpu_option = click.option(
    "--gpu", "indices", type=int, multiple=True, metavar="INDEX",
    help="A GPU (CUDA ordinal; repeatable)  [default: all visible]",
)  # fmt: skip
_json_option = click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON.")
_state_option = click.option(
    "--state-file", type=click.Path(dir_okay=False), metavar="PATH",
    help="File of original limits  [default: $GREENML_GPU_STATE or the per-user state folder]",
)  # fmt: skip


@click.group(no_args_is_help=True)
def gpu() -> None:
    """GPU power limits: allowed ranges, the optimizer's plan, set and restore."""


@gpu.command("limits")
@_gpu_option
@_json_option
def limits(indices: tuple[int, ...], as_json: bool) -> None:
    """Each GPU's power limit now, its default and the allowed range (read from NVML)."""
    from greenml.optimize.gpu_control import GpuControl

    control = GpuControl(list(indices) or None)
    try:
        rows = control.limits()
    finally:
        control.close()
    if as_json:
        print(json.dumps({"source": "NVML", "gpus": [g.to_dict() for g in rows]}, indent=2))
        return
    render.console().print(_limits_table(rows))


@gpu.command("power-plan")
@_gpu_option
@click.option("--step-w", type=float, default=25.0, show_default=True, help="Watts between limits.")
@click.option("--min-w", type=float, help="Lowest limit to profile  [default: the GPU's lowest]")
@click.option("--max-w", type=float, help="Highest limit to profile  [default: the GPU's highest]")
@click.option("--warmup-steps", type=int, default=3, show_default=True, help="Skipped per limit.")
@click.option("--profile-steps", type=int, default=5, show_default=True, help="Measured per limit.")
@click.option("--eta", type=float, default=0.5, show_default=True, help="Energy weight in [0, 1].")
@click.option("--max-slowdown", metavar="PCT", help="Least energy within this slowdown (e.g. 5%).")
@click.option("--dry-run", is_flag=True, help="Accepted for clarity: this command never sets.")
@_json_option
def power_plan(
    indices: tuple[int, ...],
    step_w: float,
    min_w: float | None,
    max_w: float | None,
    warmup_steps: int,
    profile_steps: int,
    eta: float,
    max_slowdown: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """The power-limit optimizer's plan for these GPUs; nothing is set."""
    from greenml.cli.options import parse_share
    from greenml.optimize.power_limit import PowerLimitOptimizer

    slowdown = parse_share(max_slowdown, "--max-slowdown") if max_slowdown else None
    optimizer = PowerLimitOptimizer(
        gpus=list(indices) or None, eta=eta, max_slowdown=slowdown, step_w=step_w,
        min_w=min_w, max_w=max_w, warmup_steps=warmup_steps, profile_steps=profile_steps,
        dry_run=True,
    )  # fmt: skip
    plan = optimizer.plan
    optimizer.close()
    if as_json:
        print(json.dumps(plan.to_dict(), indent=2, ensure_ascii=False))
        return
    console = render.console()
    console.print(_limits_table(list(plan.gpus)))
    limits_text = ", ".join(f"{w:g}" for w in plan.limits_w)
    console.print(f"profile: {limits_text} W, high to low", highlight=False)
    console.print(
        f"         {plan.warmup_steps} warm-up + {plan.profile_steps} measured steps per limit "
        f"(at most {plan.steps} steps), then keep the best for the rest of the run",
        highlight=False,
    )
    console.print(f"choose:  {plan.objective}", highlight=False)
    console.print("dry run: nothing was set", highlight=False)


@gpu.command("set-limit")
@click.argument("watts", type=float)
@_gpu_option
@_state_option
@click.option("--dry-run", is_flag=True, help="Show what would be set; set nothing.")
@_json_option
def set_limit(
    watts: float, indices: tuple[int, ...], state_file: str | None, dry_run: bool, as_json: bool
) -> None:
    """Set a power limit of WATTS; the originals are saved for `greenml gpu restore`."""
    from greenml.optimize.gpu_control import GpuControl, check_limit

    control = GpuControl(list(indices) or None, state_file=state_file)
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
        print(json.dumps(out, indent=2))
        return
    console = render.console()
    verb = "would set" if dry_run else "set"
    for g in before:
        console.print(f"{g.key} {g.name}: {verb} {g.limit_w:g} W → {watts:g} W", highlight=False)
    if dry_run:
        console.print("dry run: nothing was set", highlight=False)
    else:
        console.print(
            f"originals saved in {control.state_file}; `greenml gpu restore` puts them back",
            highlight=False, markup=False,
        )  # fmt: skip


@gpu.command("restore")
@_state_option
@_json_option
def restore(state_file: str | None, as_json: bool) -> None:
    """Put back the original limits saved in the state file (e.g. after a crash)."""
    from greenml.optimize.gpu_restore import restore_from_state

    result = restore_from_state(state_file)
    if as_json:
        print(json.dumps(result.to_dict(), indent=2))
        return
    console = render.console()
    if not result.restored and not result.missing:
        console.print(f"nothing to restore: no saved limits in {result.state_file}",
                      highlight=False, markup=False)  # fmt: skip
        return
    for uuid, watts in result.restored.items():
        console.print(f"{uuid}: restored to {watts:g} W", highlight=False)
    for uuid in result.missing:
        console.print(
            f"{uuid}: not on this machine; kept in {result.state_file}", highlight=False,
            markup=False,
        )  # fmt: skip


@gpu.command("straggler-sim")
@click.option("--ranks", type=int, default=8, show_default=True, help="Data-parallel GPUs.")
@click.option("--steps", type=int, default=600, show_default=True, help="Training steps.")
@click.option("--workload", default="imagenet", show_default=True,
              help="V100 curve of a Zeus workload (cifar100, imagenet, librispeech, ...).")
@click.option("--compute-s", type=float, default=0.5, show_default=True,
              help="Compute per step at the highest limit.")
@click.option("--comm-s", type=float, default=0.05, show_default=True, help="Collective per step.")
@click.option("--noise", default="1%", show_default=True, help="Per-step jitter of compute time.")
@click.option("--wait-power-w", type=float, default=70.0, show_default=True,
              help="Power of a GPU waiting at the collective (an assumption).")
@click.option("--slow", "slow", multiple=True, metavar="RANK=FACTOR",
              help="A straggler from the start (repeatable)  [default: 3=1.15]")
@click.option("--then", "then", multiple=True, metavar="RANK=FACTOR",
              help="Stragglers from halfway on, replacing --slow (repeatable)  "
                   "[default without --slow: 5=1.08 6=1.12]")
@click.option("--seeds", type=int, default=5, show_default=True, help="Runs with other jitter.")
@_json_option
def straggler_sim(
    ranks: int, steps: int, workload: str, compute_s: float, comm_s: float, noise: str,
    wait_power_w: float, slow: tuple[str, ...], then: tuple[str, ...], seeds: int, as_json: bool,
) -> None:  # fmt: skip
    """Simulate straggler-aware power limits against all GPUs at their highest limit."""
    from greenml.cli.options import parse_share
    from greenml.optimize.straggler.sim import SimConfig, simulate_seeds

    phases: list[tuple[float, dict[int, float]]] = [
        (0.0, _slowdowns(slow, "--slow") if slow else {3: 1.15})
    ]
    if then or not slow:
        phases.append((0.5, _slowdowns(then, "--then") if then else {5: 1.08, 6: 1.12}))
    config = SimConfig(
        ranks=ranks, steps=steps, workload=workload, compute_s=compute_s, comm_s=comm_s,
        noise_rel=parse_share(noise, "--noise"), wait_power_w=wait_power_w, phases=tuple(phases),
    )  # fmt: skip
    summary = simulate_seeds(config, seeds)
    if as_json:
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return
    _print_sim(summary)


def _slowdowns(items: tuple[str, ...], option: str) -> dict[int, float]:
    from greenml.errors import ConfigError

    out: dict[int, float] = {}
    for item in items:
        rank, sep, factor = item.partition("=")
        try:
            out[int(rank)] = float(factor)
        except ValueError:
            raise ConfigError(f"{option} takes RANK=FACTOR like 3=1.15, not {item!r}") from None
        if not sep:
            raise ConfigError(f"{option} takes RANK=FACTOR like 3=1.15, not {item!r}")
    return out


def _print_sim(s: dict[str, Any]) -> None:
    console = render.console()
    first = s["runs"][0]
    phases = "; ".join(
        (", ".join(f"rank {r} ×{f:g}" for r, f in p["ranks"].items()) or "none")
        + f" from step {p['from_step']}"
        for p in first["slowdowns"]
    )
    saved, change = s["saved_rel"], s["step_time_change_rel"]
    lines = [
        f"simulated: {first['ranks']} × V100, {first['workload']} curve, {first['steps']} steps, "
        f"{len(s['runs'])} seeds",
        f"imbalance: {phases or 'none'}",
        f"energy:    {render.energy(s['baseline_energy_j'])} at the highest limit → "
        f"{render.energy(s['planned_energy_j'])} planned (mean over seeds)",
        f"saved:     {saved['mean']:.1%} (range {saved['min']:.1%}–{saved['max']:.1%})",
        f"step time: {change['mean']:+.2%} (range {change['min']:+.2%}–{change['max']:+.2%})",
        f"re-plans:  {min(s['replans'])}–{max(s['replans'])} per run",
        f"source:    {first['source']}",
        "assumed:   GPUs waiting at the collective draw "
        f"{first['assumptions']['wait_power_w']:g} W; jitter "
        f"{first['assumptions']['noise_rel']:.1%} per step; curves re-profiled with "
        f"{first['assumptions']['profile_noise_rel']:.1%} noise",
    ]
    for line in lines:
        console.print(line, highlight=False, markup=False)


def _limits_table(rows: list[Any]) -> Any:
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False)
    for header in ("gpu", "name", "limit now", "default", "allowed", "uuid"):
        table.add_column(header, justify="right" if header in ("limit now", "default") else "left")
    for g in rows:
        table.add_row(g.key, g.name, f"{g.limit_w:g} W", f"{g.default_w:g} W", g.allowed, g.uuid)
    return table
