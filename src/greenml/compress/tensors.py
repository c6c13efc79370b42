"""Torch plumbing shared by the builders: inputs, outputs, sizes, a predict callable.

torch is imported inside the functions: ``import greenml.compress`` stays light.
"""

from __future__ import annotations

import io
from typing import Any

from greenml.compress.variants import Predict
from greenml.errors import ConfigError, MissingExtra


def require_torch() -> Any:
    """torch, or :class:`MissingExtra` naming ``pip install 'greenml[torch]'``."""
    try:
        import torch
    except ImportError as exc:
        raise MissingExtra("greenml compress", "torch", exc) from None
    return torch


def as_args(example_inputs: Any) -> tuple[Any, ...]:
    """The example inputs as the model's positional arguments (a tensor or a tuple of them).

    Raises:
        ConfigError: Not a tensor, nor a non-empty tuple/list of tensors.
    """
    import torch

    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    if not args or not all(isinstance(a, torch.Tensor) for a in args):
        raise ConfigError(
            "example_inputs must be a torch.Tensor or a tuple of tensors (the model's "
            f"positional arguments), got {type(example_inputs).__name__}"
        )
    if args[0].ndim == 0:
        raise ConfigError("example_inputs must be batched: the first dimension counts items")
    return args


def batch_size(args: tuple[Any, ...]) -> int:
    """Items in one example batch: the first dimension of the first input."""
    return int(args[0].shape[0])


def device_of(model: Any) -> Any:
    """The device of the model's first parameter or buffer (CPU when it has none)."""
    import torch

    for tensor in list(model.parameters()) + list(model.buffers()):
        return tensor.device
    return torch.device("cpu")


def param_count(model: Any) -> int:
    """Number of parameter elements."""
    return int(sum(p.numel() for p in model.parameters()))


def state_dict_bytes(model: Any) -> int:
    """Bytes of ``torch.save(model.state_dict())``: the size of the weights on disk."""
    import torch

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getbuffer().nbytes


def first_tensor(output: Any) -> Any:
    """The output tensor, or the first tensor of a tuple/list output; ``None`` if none."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)):
        for item in output:
            found = first_tensor(item)
            if found is not None:
                return found
    return None


def to_float32(output: Any) -> Any:
    """Floating tensors (also inside tuples/lists) converted to float32."""
    import torch

    if isinstance(output, torch.Tensor):
        return output.float() if output.is_floating_point() else output
    if isinstance(output, (tuple, list)):
        return type(output)(to_float32(item) for item in output)
    return output


def cast_inputs(args: tuple[Any, ...], dtype: Any) -> tuple[Any, ...]:
    """Floating inputs cast to ``dtype``; integer inputs (token ids, masks) left alone."""
    return tuple(a.to(dtype) if a.is_floating_point() else a for a in args)


def torch_predict(model: Any, input_dtype: Any = None) -> Predict:
    """A predict callable over a torch module: no autograd, float32 outputs.

    ``no_grad`` rather than ``inference_mode``: the outputs stay ordinary tensors
    that the user's evaluation may modify in place.
    """
    import torch

    def predict(*args: Any) -> Any:
        with torch.no_grad():
            if input_dtype is not None:
                args = cast_inputs(args, input_dtype)
            return to_float32(model(*args))

    return predict
