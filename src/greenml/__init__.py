"""greenml: measure, diagnose, cut and report the energy, carbon and cost of ML.

The public API is small and imported lazily, so ``import greenml`` stays fast::

    with greenml.Run("bert-ft", zone="DE") as run:   # stored, with carbon and cost
        train()

    from greenml import Meter
    meter = Meter()
    with meter.window("epoch") as w:
        train_one_epoch()
    print(w.measurement.total_j)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.__version__ import __version__
from greenml.lazy import lazy_exports

_LAZY = {
    "estimate": "greenml.estimation.estimator",
    "Meter": "greenml.measure.meter",
    "track": "greenml.measure.tracking",
    "Measurement": "greenml.measure.measurement",
    "GreenmlError": "greenml.errors",
    "progress": "greenml.measure.events",
    "Run": "greenml.run.inprocess",
    "runs": "greenml.run.tables",
}

__all__ = [
    "GreenmlError",
    "Measurement",
    "Meter",
    "Run",
    "__version__",
    "estimate",
    "progress",
    "runs",
    "track",
]

if TYPE_CHECKING:
    from greenml.errors import GreenmlError
    from greenml.estimation.estimator import estimate
    from greenml.measure.events import progress
    from greenml.measure.measurement import Measurement
    from greenml.measure.meter import Meter
    from greenml.measure.tracking import track
    from greenml.run.inprocess import Run
    from greenml.run.tables import runs


__getattr__ = lazy_exports(__name__, _LAZY)
