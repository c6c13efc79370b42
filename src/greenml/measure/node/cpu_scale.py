"""The CPU model's constants as the node meter sees them: one scale on the model's figures.

Where the CPU (and DRAM) are estimated by greenml's model (no RAPL), the node
meter is the only check on its constants (the TDP it scales by utilization, the
idle floor). With runs whose modelled and measured parts vary apart, the fit

    node_j = static_w × duration_s + factor × measured_j + scale_factor × modelled_j

gives ``cpu_model_scale = scale_factor / factor``: the multiplier the model's
constants would need for its figures to sit with the measured components as the
node sees them (1.3: the model's TDP is 30 % low on this machine). Its error is
the held-out (leave-one-out) error of this three-term fit. Needs four runs or
more and all three columns independent; else the reason why not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from greenml.measure.node.calibration import NodeRun

MIN_RUNS = 4


def _columns(run: NodeRun) -> list[float]:
    return [run.duration_s, run.components_j - run.modelled_j, run.modelled_j]


def _solve(runs: Sequence[NodeRun]) -> list[float]:
    import numpy as np

    a = np.array([_columns(r) for r in runs], dtype=float)
    b = np.array([r.node_j for r in runs], dtype=float)
    solution, *_ = np.linalg.lstsq(a, b, rcond=None)
    return [float(x) for x in solution]


def fit_cpu_model_scale(runs: Sequence[NodeRun]) -> tuple[float, float] | str:
    """``(cpu_model_scale, held-out relative RMS error)``, or why it cannot be fitted."""
    import numpy as np

    if len(runs) < MIN_RUNS:
        return f"the CPU model's scale needs {MIN_RUNS} runs or more, {len(runs)} given"
    design = np.array([_columns(r) for r in runs], dtype=float)
    if not design[:, 2].any():
        return "no run was measured with the CPU model (RAPL or a platform sensor measured it)"
    if np.linalg.matrix_rank(design / np.abs(design).max(axis=0).clip(min=1e-12)) < 3:
        return ("the CPU model's part and the measured components do not vary apart over "
                "these runs (or nothing but the model was measured)")  # fmt: skip
    _static, factor, scaled = _solve(runs)
    if factor <= 0:
        return "the fit gives the measured components no positive factor"
    errors = []
    for i, run in enumerate(runs):
        s, f, c = _solve([*runs[:i], *runs[i + 1 :]])
        cols = _columns(run)
        errors.append((s * cols[0] + f * cols[1] + c * cols[2] - run.node_j) / run.node_j)
    return scaled / factor, math.sqrt(sum(e * e for e in errors) / len(errors))
