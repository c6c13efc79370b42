"""The knobs a sweep applies around the user's step: precision and torch.compile.

- ``tf32``: TensorFloat-32 matmuls and convolutions (``fp32_precision = "tf32"``
  of ``torch.backends.cuda.matmul`` and ``cudnn.conv``/``rnn``; on torch < 2.9
  ``set_float32_matmul_precision("high")`` and the ``allow_tf32`` flags);
  CUDA only, Ampere or newer. ``fp32`` pins them to strict IEEE float32 (on a
  CPU, oneDNN's ``mkldnn`` ones), so that an earlier global setting does not
  turn an fp32 run into a reduced-precision one.
- ``bf16`` / ``fp16``: ``torch.autocast``. When the step exposes its model,
  the model's forward runs under autocast and its floating outputs come back
  as float32, the way Hugging Face Accelerate prepares a model; the loss is
  then computed in float32 and the backward pass runs outside autocast, as
  PyTorch's AMP guide recommends. Without a model the whole step call runs
  under autocast, and the result says so.
- ``compile``: ``model.compile()`` (``torch.compile`` in place, so the step's
  own reference to the model runs the compiled forward).

torch is imported inside the functions: ``import greenml`` never pays for it.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from greenml.errors import ConfigError, KnobUnavailable
from greenml.optimize.sweep.grid import SweepConfig

_AUTOCAST_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def import_torch() -> Any:
    """The torch module; ConfigError with the fix when it is not installed."""
    try:
        import torch
    except ImportError:
        raise ConfigError("the sweep needs PyTorch: pip install torch") from None
    return torch


def skip_reason(precision: str, device: str) -> str | None:
    """Why ``precision`` cannot run on ``device`` here, or ``None`` when it can."""
    torch = import_torch()
    if precision == "tf32":
        if device != "cuda":
            return "tf32 is a mode of NVIDIA tensor cores (Ampere and newer); a CPU has none"
        major, minor = torch.cuda.get_device_capability()
        if major < 8:
            return f"tf32 needs compute capability 8.0 (Ampere) or newer, not {major}.{minor}"
        return None
    dtype_name = _AUTOCAST_DTYPES.get(precision)
    if dtype_name is None:
        return None
    if device == "cuda" and precision == "bf16" and not torch.cuda.is_bf16_supported():
        return "this GPU does not compute in bfloat16"
    return _autocast_refusal(torch, device, getattr(torch, dtype_name), precision)


def _autocast_refusal(torch: Any, device: str, dtype: Any, precision: str) -> str | None:
    """Why torch would not autocast to ``dtype`` on ``device`` (it disables itself, warning)."""
    if not torch.amp.is_autocast_available(device):
        return f"torch {torch.__version__} has no autocast for {device}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autocast(device, dtype=dtype):
            enabled = torch.is_autocast_enabled(device)
            actual = torch.get_autocast_dtype(device)
    if not enabled or actual != dtype:
        return f"torch {torch.__version__} does not support {precision} autocast on {device}"
    return None


# torch >= 2.9: per-backend float32 precision ("ieee" strict, "tf32"); the legacy
# flags raise once a user has set these, so they are only used on older torch.
_FP32_KNOBS = {
    "cuda": (("cuda", "matmul"), ("cudnn", "conv"), ("cudnn", "rnn")),
    "cpu": (("mkldnn", "matmul"), ("mkldnn", "conv"), ("mkldnn", "rnn")),
}


@contextmanager
def float32_mode(precision: str, device: str) -> Iterator[None]:
    """Strict float32 matmuls and convolutions, or TF32 ones for ``tf32``, then as before."""
    torch = import_torch()
    if not hasattr(torch.backends.cuda.matmul, "fp32_precision"):
        with _legacy_float32_mode(torch, precision == "tf32", device):
            yield
        return
    knobs = [
        getattr(getattr(torch.backends, backend), op) for backend, op in _FP32_KNOBS[device]
    ]
    saved = [knob.fp32_precision for knob in knobs]
    for knob in knobs:
        knob.fp32_precision = "tf32" if precision == "tf32" else "ieee"
    try:
        yield
    finally:
        for knob, value in zip(knobs, saved, strict=True):
            knob.fp32_precision = value


@contextmanager
def _legacy_float32_mode(torch: Any, tf32: bool, device: str) -> Iterator[None]:
    """The same through ``set_float32_matmul_precision`` and ``allow_tf32`` (torch < 2.9)."""
    saved = torch.get_float32_matmul_precision()
    cuda = device == "cuda"
    saved_cuda = (
        (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) if cuda else None
    )
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved)
        if saved_cuda is not None:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved_cuda


def autocast_dtype(precision: str) -> Any:
    """The torch dtype of autocast for ``precision``, ``None`` for fp32/tf32."""
    name = _AUTOCAST_DTYPES.get(precision)
    return getattr(import_torch(), name) if name else None


def step_autocast(config: SweepConfig) -> AbstractContextManager[Any]:
    """The autocast context for a whole step call (a no-op for fp32/tf32)."""
    dtype = autocast_dtype(config.precision)
    if dtype is None:
        return nullcontext()
    return import_torch().autocast(config.device, dtype=dtype)  # type: ignore[no-any-return]


def autocast_forward(model: Any, config: SweepConfig) -> bool:
    """Run ``model``'s forward under autocast, outputs cast back to float32.

    Returns:
        Whether anything was wrapped (False for fp32/tf32).

    Raises:
        KnobUnavailable: ``model`` has no ``forward``.
    """
    dtype = autocast_dtype(config.precision)
    if dtype is None:
        return False
    forward = getattr(model, "forward", None)
    if not callable(forward):
        raise KnobUnavailable(f"the step's model ({type(model).__name__}) has no forward()")
    torch = import_torch()
    device = config.device

    @functools.wraps(forward)
    def autocast_then_fp32(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(device, dtype=dtype):
            out = forward(*args, **kwargs)
        return _to_fp32(out, torch)

    model.forward = autocast_then_fp32
    return True


def _to_fp32(value: Any, torch: Any) -> Any:
    """Floating tensors in ``value`` (nested tuples, lists, dicts) as float32."""
    if isinstance(value, torch.Tensor):
        return value.float() if value.is_floating_point() else value
    if isinstance(value, dict):  # in place: keeps subclasses (Hugging Face ModelOutput) intact
        for key, item in list(value.items()):
            value[key] = _to_fp32(item, torch)
        return value
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to_fp32(v, torch) for v in value)
    return value


def compile_model(model: Any, options: Mapping[str, Any] | None = None) -> None:
    """``model.compile(**options)`` in place, after a reset of torch.compile's caches.

    The reset keeps configurations independent: without it, models of earlier
    configurations count against torch.compile's recompile limit, beyond which
    it silently runs eager.

    Raises:
        KnobUnavailable: ``model`` is ``None`` or has no ``compile`` method.
    """
    if model is None:
        raise KnobUnavailable(
            "compile needs the model: return TrainStep(step, model) from make_step, "
            "or set step.model"
        )
    compile_in_place: Callable[..., None] | None = getattr(model, "compile", None)
    if not callable(compile_in_place):
        raise KnobUnavailable(
            f"the step's model ({type(model).__name__}) is not a torch.nn.Module: "
            "it has no compile()"
        )
    import_torch()._dynamo.reset()
    compile_in_place(**dict(options or {}))


def grad_scaler(config: SweepConfig) -> Any:
    """A ``torch.amp.GradScaler`` on for fp16, a pass-through for other precisions.

    fp16 gradients underflow without loss scaling; a factory uses
    ``scaler.scale(loss).backward(); scaler.step(opt); scaler.update()``.
    """
    torch = import_torch()
    return torch.amp.GradScaler(config.device, enabled=config.precision == "fp16")
