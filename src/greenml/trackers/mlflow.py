"""MLflow sink: window metrics in batches, the run record and impact statement as artifacts.

Each figure has its uncertainty beside it (``…_uncertainty``), the run carries the
tag ``greenml.run_id``, and when the MLflow run holds MLflow's own system metrics
(GPU power), their energy is logged as a second source
(:mod:`greenml.trackers.mlflow_system`).

Logs into the user's active MLflow run when there is one (it is left open),
else into a new run of the experiment ``MLFLOW_EXPERIMENT_NAME`` (default
``greenml``) that the sink ends. The tracking URI is MLflow's own setting
(``MLFLOW_TRACKING_URI``). MLflow is imported on the first batch, in the run's
background thread, so a run's start stays fast.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from greenml.errors import MissingExtra
from greenml.trackers.base import RUN_ID_TAG, WindowMetrics, require, totals

MAX_BATCH = 1000  # MLflow's limit of metrics per log_batch call


class MlflowSink:
    """Log a greenml run to MLflow (``pip install 'greenml[mlflow]'``).

    Args:
        run_name: Name of the MLflow run the sink creates (not of an active one).
        tracking_uri: Where to log; MLflow's default (``MLFLOW_TRACKING_URI``) when ``None``.
        experiment: Experiment of a run the sink creates.
    """

    name = "mlflow"

    def __init__(
        self, run_name: str | None = None, tracking_uri: str | None = None,
        experiment: str | None = None,
    ) -> None:  # fmt: skip
        if "mlflow" not in sys.modules and importlib.util.find_spec("mlflow") is None:
            raise MissingExtra("logging to MLflow", "mlflow")
        self.run_name = run_name
        self.tracking_uri = tracking_uri
        self.experiment = experiment or os.environ.get("MLFLOW_EXPERIMENT_NAME") or "greenml"
        self.run_id: str | None = None
        self._owned = True
        self._client: Any = None
        active = sys.modules["mlflow"].active_run() if "mlflow" in sys.modules else None
        if active is not None:  # the user's run (thread-local in MLflow: read it here)
            self.run_id, self._owned = active.info.run_id, False

    def _ready(self) -> Any:
        if self._client is None:
            tracking = require("mlflow.tracking", "mlflow", "logging to MLflow")
            client = tracking.MlflowClient(tracking_uri=self.tracking_uri)
            if self.run_id is None:
                found = client.get_experiment_by_name(self.experiment)
                exp_id = found.experiment_id if found else client.create_experiment(self.experiment)
                self.run_id = client.create_run(exp_id, run_name=self.run_name).info.run_id
            self._client = client
        return self._client

    def _log(self, metrics: Sequence[tuple[str, float, float, int]]) -> None:
        from mlflow.entities import Metric

        client = self._ready()
        batch = [Metric(k, v, int(t * 1000), step) for k, v, t, step in metrics]
        for i in range(0, len(batch), MAX_BATCH):
            client.log_batch(self.run_id, metrics=batch[i : i + MAX_BATCH])

    def log_windows(self, windows: Sequence[WindowMetrics]) -> None:
        self._log([(k, v, w.end_s, w.step) for w in windows for k, v in w.metrics().items()])

    def finish(self, record: dict[str, Any] | None, statement: str | None) -> None:
        client = self._ready()
        if record is not None:
            self._log([(k, v, time.time(), 0) for k, v in totals(record).items()])
            client.set_tag(self.run_id, RUN_ID_TAG, str(record.get("id", "")))
            self._second_source(client, record)
            client.log_dict(self.run_id, record, "greenml/run_record.json")
        if statement is not None:
            client.log_text(self.run_id, statement, "greenml/impact_statement.md")
        if self._owned:
            client.set_terminated(self.run_id)

    def _second_source(self, client: Any, record: dict[str, Any]) -> None:
        """MLflow's own GPU power (system metrics), integrated beside greenml's GPU energy."""
        from greenml.trackers.mlflow_system import second_source_metrics, system_gpu_energy_j

        assert self.run_id is not None
        mlflow_j = system_gpu_energy_j(client, self.run_id, record)
        if mlflow_j is None:
            return
        gpu = ((record.get("energy") or {}).get("components") or {}).get("gpu") or {}
        own = gpu.get("energy_j") if isinstance(gpu.get("energy_j"), int | float) else None
        metrics = second_source_metrics(own, mlflow_j)
        self._log([(k, v, time.time(), 0) for k, v in metrics.items()])
