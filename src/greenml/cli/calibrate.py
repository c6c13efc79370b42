"""``greenml calibrate``: fit this machine's node overhead from runs that had a node meter."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click

from greenml.cli.options import db_option, json_option
from greenml.store.export import json_text

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord


@click.command()
@db_option
@click.option("--hostname", "host", metavar="NAME",
              help="The machine to calibrate (default: this one's host name).")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=0), default=500, show_default=True,
              help="Look at the newest N runs (0: all).")  # fmt: skip
@click.option("--file", "path", type=click.Path(dir_okay=False, path_type=Path),
              help="Where calibrations are kept (default: node-calibration.json in greenml's "
                   "data folder).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Fit and print, keep nothing.")
@json_option("Print the calibration as JSON on stdout.")
def calibrate(db_url: str | None, host: str | None, limit: int, path: Path | None,
              dry_run: bool, as_json: bool) -> None:  # fmt: skip
    """Fit the node's overhead (static W + a factor on the components) from stored runs.

    Uses the runs of this machine that had a node meter (``--node-meter``): each
    gives its duration, the node's energy and the sum of its component sensors.
    The fit is least squares; its error is the leave-one-out (held-out) error
    of the node energy. Later runs of this machine without a node meter show the
    node estimated from it, labelled "calibrated on N runs, residual ±x %".
    """
    from greenml.cli.runs import open_ingested
    from greenml.measure.node.calibration import NodeRun, calibration_path, fit, save

    host = host or socket.gethostname()
    found: list[NodeRun] = []
    with open_ingested(db_url) as store:
        for summary in store.list_runs(limit=limit):
            record = store.get_run_record(summary["id"], exact=True)
            node = record.node
            if node is None or node.method == "estimated" or record.duration_s is None:
                continue  # no meter: a calibrated figure is not a measurement to fit
            if record.environment.hostname not in (None, host):
                continue
            found.append(NodeRun(record.duration_s, node.energy_j, node.components_j, record.id,
                                 _modelled_j(record)))  # fmt: skip
    calibration = fit(found, host, f"{len(found)} runs in {db_url or 'the default store'}")
    target = path or calibration_path()
    if not dry_run:
        save(calibration, target)
    if as_json:
        print(json_text({**calibration.to_dict(), "file": None if dry_run else str(target),
                         "run_ids": [r.run_id for r in found]}, indent=2))  # fmt: skip
        return
    error = "held-out (leave-one-out)" if calibration.held_out else "in-sample (2 runs)"
    click.echo(f"{host}: node = {calibration.static_w:.1f} W static + "
               f"{calibration.factor:.3f} × components")  # fmt: skip
    click.echo(f"  {calibration.label} ({error} RMS error of the node energy)")
    if calibration.cpu_model_scale is not None:
        cpu_error = (calibration.cpu_model_error_rel or 0.0) * 100
        click.echo(f"  CPU model: its figures × {calibration.cpu_model_scale:.2f} match the node "
                   f"(held-out error ±{cpu_error:.1f} %)")  # fmt: skip
    else:
        click.echo(f"  CPU model not fitted: {calibration.cpu_model_note}")
    click.echo("  not kept (--dry-run)" if dry_run else f"  kept in {target}")


def _modelled_j(record: RunRecord) -> float:
    """Joules of the run's devices that greenml's CPU/DRAM model estimated."""
    return sum(d.energy_j for c in ("cpu", "dram") if (comp := record.energy.components.get(c))
               for d in comp.devices.values() if d.method == "estimated")  # fmt: skip
