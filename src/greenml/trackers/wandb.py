"""Weights & Biases sink: window metrics, totals in the summary, the record as an artifact.

Logs into the user's ``wandb.run`` when there is one (left open), else into a
new run (project ``WANDB_PROJECT``, default ``greenml``; ``WANDB_MODE=offline``
works without a network) that the sink finishes. Each window name gets its own
step axis (``greenml/epoch/step``), so the user's own steps are not moved.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from greenml.errors import MissingExtra
from greenml.trackers.base import RUN_ID_TAG, WindowMetrics, require, totals


class WandbSink:
    """Log a greenml run to W&B (``pip install 'greenml[wandb]'``)."""

    name = "wandb"

    def __init__(self, run_name: str | None = None, project: str | None = None) -> None:
        if "wandb" not in sys.modules and importlib.util.find_spec("wandb") is None:
            raise MissingExtra("logging to Weights & Biases", "wandb")
        self.run_name = run_name
        self.project = project or os.environ.get("WANDB_PROJECT") or "greenml"
        self.run: Any = sys.modules["wandb"].run if "wandb" in sys.modules else None
        self._owned = self.run is None
        self._axes: set[str] = set()

    def _ready(self) -> Any:
        if self.run is None:
            wandb = require("wandb", "wandb", "logging to Weights & Biases")
            self.run = wandb.init(project=self.project, name=self.run_name, reinit=True)
        return self.run

    def log_windows(self, windows: Sequence[WindowMetrics]) -> None:
        run = self._ready()
        for w in windows:
            axis = f"greenml/{w.name}/step"
            if axis not in self._axes:
                self._axes.add(axis)
                run.define_metric(axis, hidden=True)
                run.define_metric(f"greenml/{w.name}/*", step_metric=axis)
            run.log({**w.metrics(), axis: w.step}, commit=self._owned)

    def finish(self, record: dict[str, Any] | None, statement: str | None) -> None:
        run = self._ready()
        if record is not None:
            run.summary.update(totals(record))
            run_id = str(record.get("id", ""))
            run.config.update({RUN_ID_TAG: run_id}, allow_val_change=True)
            run.tags = (*(run.tags or ()), f"greenml:{run_id}"[:64])
            wandb = require("wandb", "wandb", "logging to Weights & Biases")
            artifact = wandb.Artifact(f"greenml-run-{record.get('id', 'run')}", type="greenml-run")
            folder = Path(tempfile.mkdtemp(prefix="greenml-wandb-"))
            (folder / "run_record.json").write_text(json.dumps(record, default=str))
            artifact.add_file(str(folder / "run_record.json"))
            if statement is not None:
                (folder / "impact_statement.md").write_text(statement)
                artifact.add_file(str(folder / "impact_statement.md"))
            run.log_artifact(artifact)
        if self._owned:
            run.finish()
