"""Tracker sinks from their names: ``mlflow``, ``wandb``, ``tensorboard`` (each imported here)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from greenml.errors import ConfigError
from greenml.trackers.base import Sink

TRACKERS = ("mlflow", "wandb", "tensorboard")


def make_sinks(specs: Iterable[Any], run_name: str | None = None) -> list[Sink]:
    """Sinks from names (``"mlflow"``, ``"wandb"``, ``"tensorboard"``) or sink objects.

    Raises:
        ConfigError: An unknown name.
        MissingExtra: The tracker's package is not installed (names the extra).
    """
    sinks: list[Sink] = []
    for spec in specs:
        if isinstance(spec, Sink):
            sinks.append(spec)
            continue
        name = str(spec).strip().lower()
        if name == "mlflow":
            from greenml.trackers.mlflow import MlflowSink

            sinks.append(MlflowSink(run_name=run_name))
        elif name == "wandb":
            from greenml.trackers.wandb import WandbSink

            sinks.append(WandbSink(run_name=run_name))
        elif name == "tensorboard":
            from greenml.trackers.tensorboard import TensorBoardSink

            sinks.append(TensorBoardSink(run_name=run_name))
        else:
            raise ConfigError(f"unknown tracker {spec!r}; known: {', '.join(TRACKERS)}")
    return sinks
