"""``greenml run --cap-when-dirty``: its options, and the request they make.

The options reach ``run`` among its accounting keyword arguments;
:func:`pop_cap_request` takes them out before the accounting is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from greenml.errors import ConfigError

if TYPE_CHECKING:
    from greenml.optimize.dirty_cap_run import CapRequest

CAP_OPTIONS = ("--cap-when-dirty", "--cap-curve", "--dirty-above")

_OPTIONS = (
    click.option(
        "--cap-when-dirty", "cap_when_dirty", is_flag=True,
        help="Lower the GPU power limit while the grid's intensity is high, restore it when "
        "clean, within --deadline (needs --cap-curve and an intensity source).",
    ),
    click.option(
        "--cap-curve", "cap_curve", metavar="JSON",
        type=click.Path(dir_okay=False, path_type=Path),
        help="--cap-when-dirty: this job's time/energy per power limit (the power-limit "
        "optimizer's summary JSON, or a list of power_limit_w, time_s, energy_j).",
    ),
    click.option(
        "--dirty-above", "dirty_above", type=float, metavar="G_PER_KWH",
        help="--cap-when-dirty: cap above this intensity (default: the median expected "
        "until --deadline, or over the next 24 h).",
    ),
)  # fmt: skip


def dirty_cap_options(f: Any) -> Any:
    """The ``--cap-when-dirty`` options of ``greenml run``."""
    for option in reversed(_OPTIONS):
        f = option(f)
    return f


def pop_cap_request(
    kwargs: dict[str, Any], deadline: str | None, duration: str | None,
    gpus: Sequence[int] | None,
) -> CapRequest | None:  # fmt: skip
    """The capping asked for (``None``: not asked); the options leave ``kwargs``."""
    wanted = kwargs.pop("cap_when_dirty", False)
    curve: Path | None = kwargs.pop("cap_curve", None)
    above: float | None = kwargs.pop("dirty_above", None)
    if not wanted:
        if curve is not None or above is not None:
            raise ConfigError("--cap-curve and --dirty-above go with --cap-when-dirty")
        return None
    if curve is None:
        raise ConfigError("--cap-when-dirty needs --cap-curve JSON (the job's power-limit curve)")
    from greenml.optimize.dirty_cap_run import CapRequest  # the optimizer: only when asked

    chosen = tuple(gpus) if gpus is not None else None
    return CapRequest(curve_path=curve, dirty_above_g_per_kwh=above, deadline=deadline,
                      duration=duration, gpus=chosen)  # fmt: skip


def cap_summary(block: Mapping[str, Any]) -> str:
    """One line: the changes, the CO2 saved against uncapped (±) and the time it cost."""
    from greenml.quantities import co2, duration, pm

    saved = float(block["co2_saved_g"])
    u = float(block["co2_saved_uncertainty_g"])
    amount = f"{co2(saved)} {pm(u / abs(saved))}" if saved else f"{co2(0.0)} ± {co2(u)}"
    line = (
        f"greenml: capped at {block['capped_limit_w']:g} W for {duration(block['capped_s'])} "
        f"({len(block['changes'])} change(s), dirty above {block['dirty_above_g_per_kwh']:.0f} "
        f"g/kWh): {amount} saved against uncapped (estimated, GPU only), "
        f"{duration(block['time_cost_s'])} longer; intensity: {block['intensity_source']}"
    )
    return line + (f"; {block['note']}" if block.get("note") else "")
