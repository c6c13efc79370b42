"""``greenml doctor``: which sensors work on this machine, which do not, and how to fix them."""

from __future__ import annotations

import click

from greenml.cli import render
from greenml.cli.options import json_option
from greenml.store.export import json_text


@click.command()
@json_option("Print every finding as JSON on stdout.")
def doctor(as_json: bool) -> None:
    """Every sensor greenml can and cannot use here: why not, the fix, and each device's method.

    Usable sensors list the devices they measure with the method (counter,
    power-integrated, estimated) and its uncertainty. The others say why not
    (absent, driver-missing, not-installed, permission, unsupported) and the
    exact command that fixes it, when something can be fixed. Where a greenml
    agent serves this node, what it reads for you and whether it lets you change
    your job's GPUs. Last, what `greenml run` measures here, opened as a run opens it.
    """
    from dataclasses import asdict

    from greenml.agent.probe import probe_agent
    from greenml.measure.doctor import Machine
    from greenml.measure.doctor_probes import diagnose_machine, run_plan
    from greenml.optimize.control_probe import probe_power_limits

    findings = [*diagnose_machine(), probe_power_limits(Machine()), *probe_agent()]
    devices, notes = run_plan()
    if as_json:
        run = {"devices": [asdict(d) for d in devices], "notes": notes}
        print(json_text({"sensors": [f.to_dict() for f in findings], "run": run}, indent=2))
        return
    console = render.console()
    for f in findings:
        mark = "ok " if f.usable else "-- "
        console.print(f"{mark}{f.title}: {f.status}", highlight=False, markup=False)
        if f.reason:
            console.print(f"     {f.reason}", highlight=False, markup=False)
        for d in f.devices:
            line = (f"     {d.key} ({d.component}) {d.name}: {d.method}, "
                    f"±{d.uncertainty_rel * 100:.0f} %")  # fmt: skip
            console.print(line, highlight=False, markup=False)
            if d.note:
                console.print(f"       {d.note}", highlight=False, markup=False)
        if f.fix:
            console.print(f"     fix: {f.fix}", highlight=False, markup=False)
    console.print("greenml run measures here:", highlight=False, markup=False)
    for d in devices:
        console.print(f"     {d.key} ({d.component}): {d.method}, ±{d.uncertainty_rel * 100:.0f} %"
                      f" — {d.name}", highlight=False, markup=False)  # fmt: skip
    for note in notes:
        console.print(f"     note: {note}", highlight=False, markup=False)
