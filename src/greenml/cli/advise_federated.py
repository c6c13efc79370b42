"""``greenml advise federated``: federated learning or centralizing the data, with numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from greenml.cli import render
from greenml.cli.options import db_option, json_option
from greenml.store.export import json_text

_EPILOG = """\b
Examples:
  python examples/federated_digits.py --out fl.json
  greenml advise federated fl.json --link mobile
  greenml advise federated fl.json --link fixed --central 5b1463e4
  greenml advise federated fl.json --link lora=0.5        (your own kWh/GB)
"""


@click.command(epilog=_EPILOG)
@db_option
@click.argument("record", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--link",
    default="fixed",
    show_default=True,
    metavar="TYPE|NAME=KWH_PER_GB",
    help="How clients reach the server: fixed, mobile, 4g, 5g, internet-2015, or a figure.",
)
@click.option("--central", "central_run", metavar="RUN_ID", help="A measured central training run.")
@click.option("--data-bytes", type=float, help="Bytes centralizing would move (default: recorded).")
@json_option("Print the comparison as JSON on stdout.")
def federated(
    db_url: str | None,
    record: Path,
    link: str,
    central_run: str | None,
    data_bytes: float | None,
    as_json: bool,
) -> None:
    """Compare a measured federated run (FederatedMeter's JSON) with centralizing the data."""
    from greenml.advise.comms import link as find_link
    from greenml.advise.federated import FederatedRun, advise_federated

    run = FederatedRun.load(record)
    central_j = central_how = None
    if central_run is not None:
        from greenml.cli.runs import open_ingested

        with open_ingested(db_url) as store:
            rec = store.get_record(central_run)
        central_j = float((rec.get("energy") or {}).get("total_j") or 0.0)
        central_how = f"measured: run {rec['id']} (greenml run)"
    advice = advise_federated(
        run, find_link(link), central_energy_j=central_j, central_source=central_how,
        data_bytes=data_bytes,
    )  # fmt: skip
    if as_json:
        click.echo(json_text(advice.to_dict(), indent=2, ensure_ascii=False))
        return
    _print(advice)


def _print(a: Any) -> None:
    from rich.table import Table

    out = render.console()
    table = Table(show_edge=False, pad_edge=False, title="energy", title_justify="left")
    for name in ("set-up", "compute", "communication", "total", "bytes moved"):
        table.add_column(name, justify="left" if name == "set-up" else "right")
    table.add_row(
        f"federated ({a.rounds} rounds × {a.clients} clients)",
        render.energy(a.federated_compute_j + a.server_j), render.energy(a.federated_comm_j),
        render.energy(a.federated_j), f"{a.bytes_exchanged / 1e6:.3g} MB",
    )  # fmt: skip
    table.add_row(
        "centralize the data", render.energy(a.central_compute_j),
        render.energy(a.central_transfer_j), render.energy(a.central_j),
        f"{a.data_bytes / 1e6:.3g} MB",
    )  # fmt: skip
    out.print(table)
    out.print("assumptions:")
    for line in a.assumptions:
        out.print(f"  {line}", highlight=False, markup=False)
    out.print(f"decision: {a.decision()}", highlight=False, markup=False)
