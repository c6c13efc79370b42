"""Fit a node's overhead from runs that had a node meter; use it when there is none.

Model (least squares, numpy): ``node_j = static_w × duration_s + factor × components_j``,
i.e. a static draw the components never see (board, fans at idle, PSU no-load
loss) and a factor on what they draw (PSU efficiency, fans that follow the load).
The fit error is the held-out one: leave-one-out relative errors of the node
energy, their root mean square (``residual_rel``). With two runs it is the
in-sample error, labelled so.

A calibration is kept per machine (host name) in ``node-calibration.json`` under
greenml's data folder; a run without a node meter uses it, labelled
"calibrated on N runs, residual ±x %".
"""

from __future__ import annotations

import json
import math
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

FILENAME = "node-calibration.json"
MIN_RUNS = 2


@dataclass(frozen=True)
class NodeRun:
    """What a fit needs of one run: its duration, its node and its components' energy
    (``modelled_j`` of it from the CPU/DRAM model, see :mod:`.cpu_scale`)."""

    duration_s: float
    node_j: float
    components_j: float
    run_id: str = ""
    modelled_j: float = 0.0


@dataclass(frozen=True)
class Calibration:
    """One machine's fitted node overhead and the fit's error."""

    hostname: str
    static_w: float
    factor: float
    runs: int
    residual_rel: float
    held_out: bool
    fitted_at: str
    source: str = ""
    cpu_model_scale: float | None = None
    cpu_model_error_rel: float | None = None
    cpu_model_note: str = ""

    def node_j(self, duration_s: float, components_j: float) -> float:
        """The node's energy this calibration gives for a run's duration and components."""
        return self.static_w * duration_s + self.factor * components_j

    @property
    def label(self) -> str:
        """``calibrated on N runs, residual ±x %``."""
        return f"calibrated on {self.runs} runs, residual ±{self.residual_rel * 100:.1f} %"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        try:
            return cls(str(data["hostname"]), float(data["static_w"]), float(data["factor"]),
                       int(data["runs"]), float(data["residual_rel"]), bool(data["held_out"]),
                       str(data["fitted_at"]), str(data.get("source", "")),
                       _optional(data.get("cpu_model_scale")),
                       _optional(data.get("cpu_model_error_rel")),
                       str(data.get("cpu_model_note", "")))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"a node calibration is incomplete: {exc!r}") from None


def _solve(runs: Sequence[NodeRun]) -> tuple[float, float]:
    import numpy as np  # lazy: only when fitting

    a = np.array([[r.duration_s, r.components_j] for r in runs], dtype=float)
    b = np.array([r.node_j for r in runs], dtype=float)
    (static_w, factor), *_ = np.linalg.lstsq(a, b, rcond=None)
    return float(static_w), float(factor)


def fit(runs: Sequence[NodeRun], hostname: str | None = None, source: str = "") -> Calibration:
    """The least-squares overhead of ``runs`` and its leave-one-out error.

    Raises:
        ConfigError: Fewer than two usable runs, or runs that cannot tell the two
            terms apart (all with the same power: every run must not be alike).
    """
    usable = [r for r in runs if r.duration_s > 0 and r.node_j > 0 and r.components_j >= 0]
    if len(usable) < MIN_RUNS:
        raise ConfigError(f"calibrate needs at least {MIN_RUNS} runs with a node meter and "
                          f"components, found {len(usable)}")  # fmt: skip
    import numpy as np

    design = np.array([[r.duration_s, r.components_j] for r in usable], dtype=float)
    if np.linalg.matrix_rank(design / np.abs(design).max(axis=0).clip(min=1e-12)) < 2:
        raise ConfigError(
            "calibrate: the runs all draw the same component power, so the static part and "
            "the factor cannot be told apart; add runs at other loads"
        )
    static_w, factor = _solve(usable)
    errors = []
    held_out = len(usable) > MIN_RUNS
    for i, run in enumerate(usable):
        rest = usable[:i] + usable[i + 1 :] if held_out else usable
        s, f = _solve(rest) if held_out else (static_w, factor)
        errors.append((s * run.duration_s + f * run.components_j - run.node_j) / run.node_j)
    residual_rel = math.sqrt(sum(e * e for e in errors) / len(errors))
    now = datetime.now(timezone.utc).isoformat()
    from greenml.measure.node.cpu_scale import fit_cpu_model_scale

    cpu = fit_cpu_model_scale(usable)
    scale, scale_error, note = (None, None, cpu) if isinstance(cpu, str) else (*cpu, "")
    return Calibration(hostname or socket.gethostname(), static_w, factor, len(usable),
                       residual_rel, held_out, now, source, scale, scale_error, note)  # fmt: skip


def _optional(value: Any) -> float | None:
    return None if value is None else float(value)


def calibration_path(folder: Path | None = None) -> Path:
    """``node-calibration.json`` in ``folder``, by default greenml's per-user data folder."""
    if folder is None:
        import platformdirs

        folder = Path(platformdirs.user_data_dir("greenml"))
    return folder / FILENAME


def _read_all(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"node calibration {path} cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"node calibration {path} is not a JSON object")
    return data


def save(calibration: Calibration, path: Path | None = None) -> Path:
    """Keep ``calibration`` for its machine (others' calibrations stay); returns the file."""
    path = path or calibration_path()
    data = _read_all(path)
    data[calibration.hostname] = calibration.to_dict()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def load(hostname: str | None = None, path: Path | None = None) -> Calibration | None:
    """This machine's calibration, ``None`` when it has none.

    Raises:
        ConfigError: The file exists but cannot be read.
    """
    entry = _read_all(path or calibration_path()).get(hostname or socket.gethostname())
    return Calibration.from_dict(entry) if isinstance(entry, dict) else None
