"""Framework integrations: energy windows per step and epoch, and the power-limit optimizer.

Each module imports its framework, so import the one you use:
``greenml.integrations.lightning`` (PyTorch Lightning), ``greenml.integrations.hf``
(Hugging Face transformers), ``greenml.integrations.ray`` (Ray: energy per task),
``greenml.integrations.optuna_pruner`` and ``greenml.integrations.ray_tune``
(hyperparameter searches that stop trials on energy, :mod:`.search_budget`).
Importing greenml itself needs none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "EnergyPruner": "greenml.integrations.optuna_pruner",
    "EnergyStopper": "greenml.integrations.ray_tune",
    "TrialBudget": "greenml.integrations.search_budget",
    "GreenmlCallback": "greenml.integrations.lightning",
    "GreenmlTrainerCallback": "greenml.integrations.hf",
    "RayEnergy": "greenml.integrations.ray",
}

__all__ = [
    "EnergyPruner",
    "EnergyStopper",
    "GreenmlCallback",
    "GreenmlTrainerCallback",
    "RayEnergy",
    "TrialBudget",
]

if TYPE_CHECKING:
    from greenml.integrations.hf import GreenmlTrainerCallback
    from greenml.integrations.lightning import GreenmlCallback
    from greenml.integrations.optuna_pruner import EnergyPruner
    from greenml.integrations.ray import RayEnergy
    from greenml.integrations.ray_tune import EnergyStopper
    from greenml.integrations.search_budget import TrialBudget


__getattr__ = lazy_exports(__name__, _LAZY)
