"""``greenml optimize straggler-sim``: straggler-aware power limits on a simulated DDP job."""

from __future__ import annotations

from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import json_option, parse_share
from greenml.store.export import json_text


@click.command()
@click.option("--ranks", type=int, default=8, show_default=True, help="Data-parallel GPUs.")
@click.option("--steps", type=int, default=600, show_default=True, help="Training steps.")
@click.option(
    "--workload",
    default="imagenet",
    show_default=True,
    help="V100 curve of a Zeus workload (cifar100, imagenet, librispeech, ...).",
)
@click.option(
    "--compute-s",
    type=float,
    default=0.5,
    show_default=True,
    help="Compute per step at the highest limit.",
)
@click.option("--comm-s", type=float, default=0.05, show_default=True, help="Collective per step.")
@click.option("--noise", default="1%", show_default=True, help="Per-step jitter of compute time.")
@click.option(
    "--wait-power-w",
    type=float,
    default=70.0,
    show_default=True,
    help="Power of a GPU waiting at the collective (an assumption).",
)
@click.option(
    "--slow",
    "slow",
    multiple=True,
    metavar="RANK=FACTOR",
    help="A straggler from the start (repeatable)  [default: 3=1.15]",
)
@click.option(
    "--then",
    "then",
    multiple=True,
    metavar="RANK=FACTOR",
    help="Stragglers from halfway on, replacing --slow (repeatable)  "
    "[default without --slow: 5=1.08 6=1.12]",
)
@click.option("--seeds", type=int, default=5, show_default=True, help="Runs with other jitter.")
@click.option(
    "--knob",
    type=click.Choice(["power-limit", "clock"]),
    default="power-limit",
    show_default=True,
    help="What the planner sets: power limits, or locked graphics clocks (Perseus).",
)
@json_option()
def straggler_sim(
    ranks: int, steps: int, workload: str, compute_s: float, comm_s: float, noise: str,
    wait_power_w: float, slow: tuple[str, ...], then: tuple[str, ...], seeds: int, knob: str,
    as_json: bool,
) -> None:  # fmt: skip
    """Simulate straggler-aware power limits or clocks against all GPUs at their highest."""
    from greenml.optimize.straggler.sim import SimConfig, simulate_seeds

    phases: list[tuple[float, dict[int, float]]] = [
        (0.0, _slowdowns(slow, "--slow") if slow else {3: 1.15})
    ]
    if then or not slow:
        phases.append((0.5, _slowdowns(then, "--then") if then else {5: 1.08, 6: 1.12}))
    config = SimConfig(
        ranks=ranks, steps=steps, workload=workload, compute_s=compute_s, comm_s=comm_s,
        noise_rel=parse_share(noise, "--noise"), wait_power_w=wait_power_w, phases=tuple(phases),
        knob=knob,
    )  # fmt: skip
    summary = simulate_seeds(config, seeds)
    if as_json:
        print(json_text(summary, indent=2, ensure_ascii=False))
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
        "knob:      " + ("power limits (W)" if s["knob"] == "power-limit" else
                         "locked graphics clocks (MHz)"),
        f"energy:    {render.energy(s['baseline_energy_j'])} at the highest "
        f"{'limit' if s['knob'] == 'power-limit' else 'clock'} → "
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
    if "clock_model" in first["assumptions"]:
        lines.append(f"model:     {first['assumptions']['clock_model']}")
    for line in lines:
        console.print(line, highlight=False, markup=False)
