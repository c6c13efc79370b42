"""Framework integrations: energy windows per step and epoch, and the power-limit optimizer.

Each module imports its framework, so import the one you use:
``greenml.integrations.lightning`` (PyTorch Lightning), ``greenml.integrations.hf``
(Hugging Face transformers) or ``greenml.integrations.ray`` (Ray: energy per task).
Importing greenml itself needs none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "GreenmlCallback": "greenml.integrations.lightning",
    "GreenmlTrainerCallback": "greenml.integrations.hf",
    "RayEnergy": "greenml.integrations.ray",
}

__all__ = [
    "GreenmlCallback",
    "GreenmlTrainerCallback",
    "RayEnergy",
]

if TYPE_CHECKING:
    from greenml.integrations.hf import GreenmlTrainerCallback
    from greenml.integrations.lightning import GreenmlCallback
    from greenml.integrations.ray import RayEnergy


__getattr__ = lazy_exports(__name__, _LAZY)
