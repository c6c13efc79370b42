"""Node, components and residual: the ``node`` block of a run.

``residual = node − Σ components``: what the component sensors do not see (PSU
losses, fans, NICs, disks, the board) plus what their scope leaves out (other
processes' CPU time when the CPU is measured in process scope). Node and
components come from independent sensors, so the residual's uncertainty is the
quadrature of both absolute uncertainties.

Without a node meter, a calibration of this machine (:mod:`.calibration`)
estimates the node from the components, labelled as such.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from greenml.measure.measurement import ESTIMATED

if TYPE_CHECKING:
    from greenml.measure.measurement import Measurement
    from greenml.measure.node.calibration import Calibration

RESIDUAL_NOTE = (
    "residual = node − components: PSU losses, fans, NICs, disks, the board, and what the "
    "components' scope leaves out (other processes, when the CPU is measured per process)"
)
NEGATIVE_NOTE = (
    "the components exceed the node by more than the uncertainty: a component is measured "
    "wider than the node (another node's device?) or the meter lags the load"
)


def _block(source: str, method: str, node_j: float, node_unc_j: float, m: Measurement,
           note: str) -> dict[str, Any]:  # fmt: skip
    comp_j = m.total_j
    comp_unc_j = m.uncertainty_rel * comp_j
    residual = node_j - comp_j
    residual_unc = math.hypot(node_unc_j, comp_unc_j)
    notes = [note]
    if residual < -residual_unc:
        notes.append(NEGATIVE_NOTE)
    return {
        "source": source,
        "method": method,
        "energy_j": node_j,
        "uncertainty_rel": node_unc_j / node_j if node_j > 0 else 0.0,
        "components_j": comp_j,
        "components_uncertainty_rel": m.uncertainty_rel,
        "residual_j": residual,
        "residual_uncertainty_j": residual_unc,
        "residual_share": residual / node_j if node_j > 0 else None,
        "notes": notes,
    }


def node_block(m: Measurement, calibration: Calibration | None = None) -> dict[str, Any] | None:
    """The ``node`` block: measured when ``m`` has a node meter, else from ``calibration``.

    ``None`` when neither: a run without a meter or calibration has no node figure.
    """
    if m.node is not None and m.node.devices:
        device = next(iter(m.node.devices.values()))
        return _block(device.name or "node meter", m.node.method, m.node.energy_j,
                      m.node.uncertainty_j, m, RESIDUAL_NOTE)  # fmt: skip
    if calibration is None:
        return None
    node_j = calibration.node_j(m.duration_s, m.total_j)
    block = _block("calibration", ESTIMATED, node_j, node_j * calibration.residual_rel, m,
                   f"{calibration.label}; {RESIDUAL_NOTE}")  # fmt: skip
    block["calibration"] = calibration.to_dict()
    return block


def run_node_block(m: Measurement) -> dict[str, Any] | None:
    """:func:`node_block` for a finished run: this machine's calibration when it has no meter.

    Never raises: an unreadable calibration costs this block only (with a warning).
    """
    import logging

    try:
        calibration = None
        if m.node is None:
            from greenml.measure.node.calibration import load

            calibration = load()
        return node_block(m, calibration)
    except Exception as exc:
        logging.getLogger("greenml").warning("greenml: node block not computed: %s", exc)
        return None
