"""``greenml optimize power-plan``: the power-limit optimizer's plan for this machine's GPUs."""

from __future__ import annotations

import click

from greenml.cli import render
from greenml.cli.options import gpu_renamed, gpus_option, gpus_to_act_on, json_option, parse_share
from greenml.store.export import json_text


@click.command()
@gpus_option
@gpu_renamed
@click.option("--step-w", type=float, default=25.0, show_default=True, help="Watts between limits.")
@click.option("--min-w", type=float, help="Lowest limit to profile  [default: the GPU's lowest]")
@click.option("--max-w", type=float, help="Highest limit to profile  [default: the GPU's highest]")
@click.option("--warmup-steps", type=int, default=3, show_default=True, help="Skipped per limit.")
@click.option("--profile-steps", type=int, default=5, show_default=True, help="Measured per limit.")
@click.option("--eta", type=float, default=0.5, show_default=True, help="Energy weight in [0, 1].")
@click.option("--max-slowdown", metavar="PCT", help="Least energy within this slowdown (e.g. 5%).")
@click.option("--dry-run", is_flag=True, help="Accepted for clarity: this command never sets.")
@json_option()
def power_plan(
    gpus: str | None,
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
    from greenml.optimize.power_limit import PowerLimitOptimizer

    slowdown = parse_share(max_slowdown, "--max-slowdown") if max_slowdown else None
    optimizer = PowerLimitOptimizer(
        gpus=gpus_to_act_on(gpus), eta=eta, max_slowdown=slowdown, step_w=step_w,
        min_w=min_w, max_w=max_w, warmup_steps=warmup_steps, profile_steps=profile_steps,
        dry_run=True,
    )  # fmt: skip
    plan = optimizer.plan
    optimizer.close()
    if as_json:
        print(json_text(plan.to_dict(), indent=2, ensure_ascii=False))
        return
    console = render.console()
    console.print(render.gpu_limits_table(list(plan.gpus)))
    limits_text = ", ".join(f"{w:g}" for w in plan.limits_w)
    console.print(f"profile: {limits_text} W, high to low", highlight=False)
    console.print(
        f"         {plan.warmup_steps} warm-up + {plan.profile_steps} measured steps per limit "
        f"(at most {plan.steps} steps), then keep the best for the rest of the run",
        highlight=False,
    )
    console.print(f"choose:  {plan.objective}", highlight=False)
    console.print("dry run: nothing was set", highlight=False)
