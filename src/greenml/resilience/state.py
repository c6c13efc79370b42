"""Collect and restore everything an exact resume needs.

:class:`TrainingState` names the objects of one training loop — model,
optimizer, LR scheduler, AMP ``GradScaler``, the data position (a
``torch.Generator`` that orders the data, a sampler or loader with
``state_dict``, and/or a plain ``data_state`` dict the loop keeps up to date)
— and turns them, with the step, the epoch and the random number generator
states of Python, NumPy and torch (CPU and every CUDA device), into one
payload of tensors and plain values that ``torch.load(weights_only=True)``
can read back.

Restoring checks the model first and refuses a checkpoint of another model:
the :class:`~greenml.errors.ConfigError` names the missing, unexpected and
mis-shaped keys, and nothing is modified.

Lazy imports: numpy (~0.1 s) and torch (~1 s) are imported inside the functions that use
them, so importing this module stays cheap.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from greenml.errors import ConfigError

log = logging.getLogger("greenml")

_MAX_NAMED = 8


@dataclass
class TrainingState:
    """The objects of one training loop whose state a checkpoint holds.

    Attributes:
        model: A ``torch.nn.Module``.
        optimizer: A ``torch.optim.Optimizer``.
        scheduler: An LR scheduler (anything with ``state_dict``).
        scaler: A ``torch.amp.GradScaler``.
        generator: The ``torch.Generator`` that shuffles or draws the data.
        sampler: A sampler or loader with ``state_dict``/``load_state_dict``
            (e.g. torchdata's ``StatefulDataLoader``).
        data_state: A dict the loop keeps current (epoch offset, shard, cursor…);
            restored in place.
        extra: More named objects with ``state_dict``/``load_state_dict``.
    """

    model: Any = None
    optimizer: Any = None
    scheduler: Any = None
    scaler: Any = None
    generator: Any = None
    sampler: Any = None
    data_state: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def collect(self, *, step: int, epoch: int = 0) -> dict[str, Any]:
        """The payload to save at a step boundary."""
        payload: dict[str, Any] = {"step": int(step), "epoch": int(epoch), "rng": capture_rng()}
        for key in ("model", "optimizer", "scheduler", "scaler", "sampler"):
            obj = getattr(self, key)
            if obj is not None:
                payload[key] = obj.state_dict()
        if self.generator is not None:
            payload["generator"] = self.generator.get_state()
        if self.data_state is not None:
            payload["data_state"] = dict(self.data_state)
        if self.extra:
            payload["extra"] = {name: obj.state_dict() for name, obj in self.extra.items()}
        return payload

    def restore(self, payload: Mapping[str, Any]) -> tuple[int, int]:
        """Load a payload into the objects; returns ``(step, epoch)``.

        Raises:
            ConfigError: The checkpoint belongs to another model (keys or shapes
                differ), or lacks the state of an object given here.
        """
        self._check(payload)
        if self.model is not None:
            self.model.load_state_dict(payload["model"], strict=True)
        for key in ("optimizer", "scheduler", "scaler", "sampler"):
            obj = getattr(self, key)
            if obj is not None:
                try:
                    obj.load_state_dict(payload[key])
                except (ValueError, KeyError, RuntimeError) as exc:
                    raise ConfigError(f"the checkpoint's {key} state does not fit: {exc}") from exc
        if self.generator is not None:
            self.generator.set_state(payload["generator"])
        if self.data_state is not None:
            self.data_state.clear()
            self.data_state.update(payload["data_state"])
        for name, obj in self.extra.items():
            obj.load_state_dict(payload["extra"][name])
        restore_rng(payload["rng"])
        return int(payload["step"]), int(payload["epoch"])

    def _check(self, payload: Mapping[str, Any]) -> None:
        wanted = [k for k in ("model", "optimizer", "scheduler", "scaler", "sampler", "generator")]
        missing = [k for k in wanted if getattr(self, k) is not None and k not in payload]
        if self.data_state is not None and "data_state" not in payload:
            missing.append("data_state")
        saved_extra = payload.get("extra", {})
        missing += [f"extra.{name}" for name in self.extra if name not in saved_extra]
        if missing or "rng" not in payload or "step" not in payload:
            parts = ", ".join(missing + [k for k in ("step", "rng") if k not in payload])
            raise ConfigError(f"the checkpoint holds no state for: {parts}")
        if self.model is not None:
            check_model_state(self.model.state_dict(), payload["model"])


def check_model_state(expected: Mapping[str, Any], saved: Mapping[str, Any]) -> None:
    """Refuse a saved ``state_dict`` whose keys or shapes differ from the model's.

    Raises:
        ConfigError: Naming the missing, unexpected and mis-shaped keys.
    """
    missing = [k for k in expected if k not in saved]
    unexpected = [k for k in saved if k not in expected]
    mismatched = [
        f"{k} (checkpoint {_shape(saved[k])}, model {_shape(v)})"
        for k, v in expected.items()
        if k in saved and _shape(saved[k]) != _shape(v)
    ]
    if not (missing or unexpected or mismatched):
        return
    parts = []
    for label, keys in (
        ("shape mismatch", mismatched),
        ("missing from the checkpoint", missing),
        ("not in the model", unexpected),
    ):
        if keys:
            shown = ", ".join(keys[:_MAX_NAMED])
            more = f" and {len(keys) - _MAX_NAMED} more" if len(keys) > _MAX_NAMED else ""
            parts.append(f"{label}: {shown}{more}")
    raise ConfigError("the checkpoint is from another model — " + "; ".join(parts))


def _shape(value: Any) -> list[int] | None:
    shape = getattr(value, "shape", None)
    return None if shape is None else [int(d) for d in shape]


def capture_rng() -> dict[str, Any]:
    """The states of Python's, NumPy's and torch's global generators (CPU, CUDA)."""
    state: dict[str, Any] = {"python": random.getstate()}
    try:
        import numpy as np
    except ImportError:  # numpy is optional for this module
        pass
    else:
        kind, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
        state["numpy"] = {
            "kind": str(kind),
            "keys": [int(k) for k in keys],
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        }
    import torch

    state["torch_cpu"] = torch.get_rng_state()
    if torch.cuda.is_available():
        state["torch_cuda"] = list(torch.cuda.get_rng_state_all())
    return state


def restore_rng(state: Mapping[str, Any]) -> None:
    """Set the global generators back to a :func:`capture_rng` state."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    if "numpy" in state:
        import numpy as np

        s = state["numpy"]
        keys = np.asarray(s["keys"], dtype=np.uint32)
        np.random.set_state((s["kind"], keys, s["pos"], s["has_gauss"], s["cached_gaussian"]))
    import torch

    torch.set_rng_state(state["torch_cpu"])
    cuda = state.get("torch_cuda")
    if cuda and torch.cuda.is_available():
        count = torch.cuda.device_count()
        if count != len(cuda):
            log.warning(
                "checkpoint has CUDA RNG states for %d devices, this process sees %d; "
                "restoring the first %d",
                len(cuda),
                count,
                min(count, len(cuda)),
            )
        for index, cuda_state in enumerate(cuda[:count]):
            torch.cuda.set_rng_state(cuda_state, device=index)
    elif cuda:
        log.warning("checkpoint has CUDA RNG states but CUDA is not available; not restored")
