"""TensorBoard sink: window scalars, totals, and the record and statement as text, in event files.

Writes with ``torch.utils.tensorboard`` into ``log_dir``: the argument, else
``GREENML_TENSORBOARD_DIR``, else ``runs/greenml-NAME`` (TensorBoard's habit).
The writer is made on the first batch, in the run's background thread.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Sequence
from typing import Any

from greenml.errors import MissingExtra
from greenml.trackers.base import RUN_ID_TAG, WindowMetrics, require, totals

LOG_DIR_ENV = "GREENML_TENSORBOARD_DIR"


class TensorBoardSink:
    """Log a greenml run as TensorBoard event files (``pip install 'greenml[tensorboard]'``)."""

    name = "tensorboard"

    def __init__(self, run_name: str | None = None, log_dir: str | None = None) -> None:
        if importlib.util.find_spec("tensorboard") is None:
            raise MissingExtra("logging to TensorBoard", "tensorboard")
        self.log_dir = log_dir or os.environ.get(LOG_DIR_ENV) or f"runs/greenml-{run_name or 'run'}"
        self._writer: Any = None

    def _ready(self) -> Any:
        if self._writer is None:
            board = require("torch.utils.tensorboard", "tensorboard", "logging to TensorBoard")
            self._writer = board.SummaryWriter(log_dir=self.log_dir)
        return self._writer

    def log_windows(self, windows: Sequence[WindowMetrics]) -> None:
        writer = self._ready()
        for w in windows:
            for key, value in w.metrics().items():
                writer.add_scalar(key, value, w.step, walltime=w.end_s)
        writer.flush()

    def finish(self, record: dict[str, Any] | None, statement: str | None) -> None:
        writer = self._ready()
        if record is not None:
            for key, value in totals(record).items():
                writer.add_scalar(key, value, 0)
            writer.add_text(RUN_ID_TAG, str(record.get("id", "")), 0)
            text = json.dumps(record, indent=2, default=str)
            writer.add_text("greenml/run_record", f"```json\n{text}\n```", 0)
        if statement is not None:
            writer.add_text("greenml/impact_statement", statement, 0)
        writer.close()
