"""The ``node`` block: the node's own meter beside the components, and the residual.

Written by :mod:`greenml.measure.node.balance` (schema version 5). ``method`` is
how the node figure was obtained: ``counter`` or ``power-integrated`` from a
node meter (``source`` names it), ``estimated`` from a calibration of this
machine (``calibration`` says on how many runs and with what error).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from greenml.record.blocks import Method
from greenml.record.codec import REQUIRED, Block, meta


@dataclass(frozen=True, kw_only=True)
class NodeCalibration(Block):
    """A machine's fitted overhead: ``node_j = static_w × duration_s + factor × components_j``."""

    hostname: str = field(default="", metadata=REQUIRED)
    static_w: float = field(default=0.0, metadata=REQUIRED)
    factor: float = field(default=0.0, metadata=REQUIRED)
    runs: int = field(default=0, metadata=meta(required=True, minimum=0))
    residual_rel: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    held_out: bool = False
    fitted_at: str | None = None
    source: str | None = None
    cpu_model_scale: float | None = None
    cpu_model_error_rel: float | None = None
    cpu_model_note: str | None = None


@dataclass(frozen=True, kw_only=True)
class NodeBlock(Block):
    """Node energy, the sum of the component sensors, and their difference (the residual)."""

    source: str = field(default="", metadata=REQUIRED)
    method: Method = field(default="estimated", metadata=REQUIRED)
    energy_j: float = field(default=0.0, metadata=REQUIRED)
    uncertainty_rel: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    components_j: float = field(default=0.0, metadata=REQUIRED)
    components_uncertainty_rel: float = field(default=0.0, metadata=meta(minimum=0))
    residual_j: float = field(default=0.0, metadata=REQUIRED)
    residual_uncertainty_j: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    residual_share: float | None = None
    notes: list[str] | None = None
    calibration: NodeCalibration | None = None
