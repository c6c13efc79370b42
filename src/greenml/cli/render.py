"""How figures look in a terminal: energy with its unit, method and uncertainty."""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import greenml.quantities as q
from greenml.errors import ConfigError
from greenml.measure.measurement import Measurement
from greenml.quantities import J_PER_KWH

_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """Text from a run (a name, a tag, a command) made harmless for a terminal.

    Control characters (an escape sequence that clears the screen, a bell, a
    carriage return that hides what came before) and invisible format
    characters (a right-to-left override) are shown as ``\\x1b``-style escapes,
    and rich markup (``[bold]``) is escaped, so one user's run name cannot act
    on another user's terminal through a shared store.
    """
    from rich.markup import escape

    shown = _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))
    shown = "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) == "Cf" else c for c in shown)
    return escape(shown)


def scaled(value: float, units: Sequence[tuple[float, str]], like: float | None = None) -> str:
    """``value`` (base units) with three significant figures in the unit of ``units`` that
    fits it (or that ``like`` takes): :func:`greenml.quantities.scaled`."""
    return q.scaled(value, units, like=like)


ENERGY_UNITS = tuple((unit[0], unit[1]) for unit in q.ENERGY_UNITS)
MASS_UNITS = q.MASS_UNITS
POWER_UNITS = q.POWER_UNITS


def energy(joules: float, like: float | None = None) -> str:
    """Joules in the unit a person reads best: ``51.0 J``, ``14.2 kJ``, ``560 kWh``
    (in the unit of ``like`` when given)."""
    return q.energy(joules, like=like)


def duration(seconds: float) -> str:
    """``1:02:03`` for long runs, ``12.3 s`` for short ones."""
    return q.elapsed(seconds)


def percent(rel: float) -> str:
    """A relative uncertainty: ``±12 %``."""
    return q.pm(rel)


def status_line(
    elapsed_s: float, power_w: float, energy_j: float, uncertainty_rel: float,
    like_j: float | None = None,
) -> str:  # fmt: skip
    """The live line ``greenml run`` keeps on a terminal (energy in the unit of ``like_j``)."""
    return (
        f"greenml ▸ {duration(elapsed_s)} · {power_w:.0f} W · "
        f"{energy(energy_j, like_j)} ({percent(uncertainty_rel)})"
    )


def fit_width(line: str, columns: int) -> str:
    """``line`` cut to ``columns - 1`` characters (a full line would wrap and leave copies)."""
    room = max(columns - 1, 1)
    return line if len(line) <= room else line[: room - 1] + "…"


def power(watts: float) -> str:
    """Watts with three significant figures: ``13.0 W``, ``1.51 kW``."""
    return q.power(watts)


def measurement_table(m: Measurement, title: str, columns: int | None = None) -> Any:
    """A rich Table: one row per device, a total row, methods and uncertainties.

    Readable at 80 columns: figures and labels never wrap; only the device
    name is shortened (with an ellipsis) when the terminal is narrow.
    """
    from rich.table import Table

    secs = m.duration_s
    rows = [
        (comp_name, safe(f"{key} {dev.name}"), energy(dev.energy_j),
         power(dev.energy_j / secs) if secs > 0 else "-", dev.method,
         percent(dev.uncertainty_rel).lstrip("±"))
        for comp_name, comp in m.components.items() for key, dev in comp.devices.items()
    ]  # fmt: skip
    total = ("total", "", energy(m.total_j), power(m.average_power_w) if secs > 0 else "-", "",
             percent(m.uncertainty_rel).lstrip("±"))  # fmt: skip
    headers = ("part", "device", "energy", "power", "method", "±")
    fits = [max(len(str(r[i])) for r in [headers, *rows, total]) for i in range(len(headers))]
    width = columns if columns is not None else console(stderr=True).width
    device_w = min(36, max(12, width - (sum(fits) - fits[1]) - 3 * (len(headers) - 1)))
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for i, header in enumerate(headers):
        if header == "device":
            table.add_column(header, overflow="ellipsis", no_wrap=True, max_width=device_w)
            continue
        right = "right" if header in ("energy", "power", "±") else "left"
        table.add_column(header, justify=right, no_wrap=True, min_width=fits[i])  # type: ignore[arg-type]
    if not rows:
        table.add_row("-", "nothing measured (no sensor enabled or available)", "-", "-", "-", "-")
        return table
    for row in rows:
        table.add_row(*row)
    table.add_section()
    table.add_row(*total, style="bold")
    return table


def console(stderr: bool = False) -> Any:
    """A rich Console; when the output is not a terminal, lines are not cut at 80 columns."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else 132
    return Console(file=stream, highlight=False, width=width)


def print_err(renderable: Any) -> None:
    """Print to stderr (greenml never writes its own output into the command's stdout)."""
    console(stderr=True).print(renderable)


def co2(kg: float) -> str:
    """Kilograms of CO2eq in the unit a person reads best: ``57.2 mg CO2eq``, ``1.20 t CO2eq``."""
    return q.co2(kg * 1000.0)


def usd(amount: float) -> str:
    """Dollars (:func:`greenml.quantities.money`): ``$12.35``, ``$0.000066``."""
    return q.money(amount, digits=2)


def carbon_lines(block: dict[str, Any] | None) -> list[str]:
    """The carbon of a run: kg with uncertainty, intensity and source, PUE, IT vs facility."""
    if not block:
        return []
    status = block.get("status", "ok")
    if status != "ok" or block.get("kg") is None:
        why = str(block.get("hint") or block.get("reason") or "")
        why = why.removeprefix("carbon unknown: ")
        return [f"carbon: {status} — {why}" if why else f"carbon: {status}"]
    rel = block.get("uncertainty_rel")
    spread = f" {percent(rel)}" if rel is not None else ""
    it_j = float(block.get("it_energy_kwh", 0.0)) * J_PER_KWH
    facility_j = float(block.get("facility_energy_kwh", 0.0)) * J_PER_KWH
    return [
        f"carbon: {co2(block['kg'])}{spread} ({block.get('method', '')})",
        f"        {block.get('intensity_g_per_kwh', 0.0):.0f} g/kWh — {block.get('source', '')}",
        f"        PUE {block.get('pue', 1.0):.2f} ({block.get('pue_source', '')}) · "
        f"IT {energy(it_j)} → facility {energy(facility_j)}",
    ]


def node_lines(block: dict[str, Any] | None) -> list[str]:
    """The node's meter (or calibration), the components' sum and the residual."""
    if not block or not isinstance(block.get("energy_j"), (int, float)):
        return []
    node_j, comp_j = float(block["energy_j"]), float(block.get("components_j") or 0.0)
    residual, spread = float(block.get("residual_j") or 0.0), block.get("residual_uncertainty_j")
    share = block.get("residual_share")
    cal = block.get("calibration") or {}
    fit_rel = float(cal.get("residual_rel") or 0.0)
    how = (f"calibrated on {cal.get('runs')} runs, residual ±{fit_rel * 100:.1f} %" if cal
           else f"{block.get('source')}, {block.get('method')}")  # fmt: skip
    share_text = f", {share * 100:.0f} % of node" if isinstance(share, (int, float)) else ""
    spread_text = f" ±{energy(float(spread), residual)}" if isinstance(spread, (int, float)) else ""
    return [
        f"node: {energy(node_j)} {percent(float(block.get('uncertainty_rel') or 0.0))} ({how})",
        f"      components {energy(comp_j, node_j)} "
        f"{percent(float(block.get('components_uncertainty_rel') or 0.0))} · residual "
        f"{energy(residual, node_j)}{spread_text}{share_text} (PSU losses, fans, NICs, disks)",
    ]


def footprint_lines(blocks: dict[str, Any]) -> list[str]:
    """Market-based and embodied carbon, water, counted work and the node: one line each
    where known."""
    lines = node_lines(blocks.get("node"))
    market = blocks.get("carbon_market") or {}
    if market.get("status") == "ok" and market.get("kg") is not None:
        offsets = market.get("offsets_kg")
        held = f"; offsets {co2(offsets)} held, not subtracted" if offsets else ""
        rel = market.get("uncertainty_rel")
        spread = f" {percent(rel)}" if isinstance(rel, (int, float)) else ""
        lines.append(f"carbon, market-based: {co2(market['kg'])}{spread} "
                     f"({market.get('basis')}){held}")  # fmt: skip
    embodied = blocks.get("embodied") or {}
    if embodied.get("status") == "ok" and embodied.get("kg") is not None:
        rel = embodied.get("uncertainty_rel")
        spread = f" {percent(rel)}" if rel is not None else ""
        lines.append(f"embodied: {co2(embodied['kg'])}{spread} (by {embodied.get('basis')})")
    water = blocks.get("water") or {}
    if water.get("litres") is not None:
        wue = water.get("wue_l_per_kwh")
        rel = water.get("uncertainty_rel")
        onsite = (f"on-site {_litres(water.get('onsite_l'), rel)} at WUE {wue} L/kWh" if wue
                  else "no on-site cooling water")  # fmt: skip
        offsite = ("off-site unknown: a lower bound" if water.get("offsite_l") is None
                   else f"off-site {_litres(water['offsite_l'], rel)} (generation)")  # fmt: skip
        spread = f" {percent(rel)}" if isinstance(rel, (int, float)) else ""
        lines.append(f"water: {_litres(water['litres'], rel)}{spread} ({onsite}; {offsite})")
    flops = blocks.get("flops") or {}
    if flops.get("flops") is not None:
        mfu = flops.get("mfu")
        tail = f" · MFU {mfu:.1%}" if isinstance(mfu, (int, float)) else ""
        rel = flops.get("uncertainty_rel")
        spread = f" {percent(rel)}" if isinstance(rel, (int, float)) else ""
        lines.append(f"work: {flops['flops']:.3g} FLOPs{spread} {flops.get('method')}{tail}")
    return lines


def _litres(value: Any, rel: Any = None) -> str:
    """``0.479 mL``, ``2.5 L``: litres in a unit that fits."""
    if not isinstance(value, (int, float)):
        return "?"
    return q.litres(float(value), rel if isinstance(rel, (int, float)) else None)


def cost_lines(block: dict[str, Any] | None, show_unknown: bool = False) -> list[str]:
    """The cost of a run: electricity at its price, and the instance's hours."""
    if not block:
        return []
    status = block.get("status", "ok")
    instance = block.get("instance")
    lines = []
    if status != "ok" or block.get("usd") is None:
        if status == "unknown" and not show_unknown and not instance:
            return []
        why = block.get("hint") or block.get("reason") or ""
        lines.append(f"cost:   {status} — {why}" if why else f"cost:   {status}")
    elif block.get("basis", "electricity") == "electricity":
        rate = block.get("usd_per_kwh_effective")
        at = f" · {usd(rate)}/kWh effective" if rate is not None else ""
        lines.append(f"cost:   {usd(block['usd'])} electricity{at} ({block.get('method', '')})")
        lines.append(f"        {block.get('source', '')}")
    if instance:
        head = "cost:  " if not lines else "       "
        lines.append(
            f"{head} {usd(instance['usd'])} instance {instance['instance_type']} "
            f"({instance['provider']} {instance['region']}, {instance['pricing']}): "
            f"{duration(instance['hours'] * 3600)} × {usd(instance['usd_per_h'])}/h"
        )
        lines.append(f"        {instance['source']}, {instance['date']} (list price)")
        saved = instance.get("spot_saving_usd")
        if saved is not None:
            lines.append(
                f"        spot saved {usd(saved)} ({q.percent(instance['spot_saving_rel'])}) "
                f"against on-demand {usd(instance['on_demand_usd_per_h'])}/h; spot price: "
                f"{instance.get('spot_source')}, {instance.get('spot_date')}"
            )
    return lines


def gpu_limits_table(rows: list[Any]) -> Any:
    """Each GPU's power limit now, its default and the allowed range."""
    from rich.table import Table

    table = Table(show_edge=False, pad_edge=False)
    for header in ("gpu", "name", "limit now", "default", "allowed", "uuid"):
        table.add_column(header, justify="right" if header in ("limit now", "default") else "left")
    for g in rows:
        table.add_row(g.key, g.name, f"{g.limit_w:g} W", f"{g.default_w:g} W", g.allowed, g.uuid)
    return table


def write_output(text: str, output: Path | None) -> None:
    """``text`` into the file ``output`` (``-o``), or on stdout when none is given.

    Raises:
        ConfigError: The file cannot be written (one line: the path and why).
    """
    if output is None:
        sys.stdout.write(text)
        return
    from greenml.store.protected_files import refuse_overwrite

    refuse_overwrite(output, "-o")
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {output}: {exc.strerror or exc}") from None
    said_written(output)


def said_written(output: Path) -> None:
    """One line on stderr naming what a command wrote (``-o``): it does not finish silently."""
    size = output.stat().st_size if output.is_file() else 0
    print(f"greenml: wrote {output} ({size:,} bytes)", file=sys.stderr)
