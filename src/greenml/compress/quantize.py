"""Lower precision: dynamic INT8 (torch.ao) and BF16/FP16 casts, where the device runs them.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

from greenml.compress.tensors import (
    cast_inputs,
    device_of,
    param_count,
    state_dict_bytes,
    torch_predict,
)
from greenml.compress.variants import BuildContext, Built
from greenml.errors import NotApplicable

TORCH_AO_NOTE = (
    "torch.ao.quantization.quantize_dynamic (deprecated upstream in favour of torchao, "
    "which is not used here)"
)


def build_int8(ctx: BuildContext) -> Built:
    """Dynamic INT8: Linear (and LSTM) weights stored as int8, activations quantized per call.

    Raises:
        NotApplicable: The model is not on the CPU (these kernels are CPU-only),
            or it has no Linear/LSTM layer.
    """
    import torch
    from torch import nn

    device = device_of(ctx.model)
    if device.type != "cpu":
        raise NotApplicable(
            f"dynamic INT8 kernels (fbgemm/x86/qnnpack) run on the CPU only; the model is on "
            f"{device.type}"
        )
    targets = {nn.Linear, nn.LSTM}
    if not any(isinstance(m, tuple(targets)) for m in ctx.model.modules()):
        raise NotApplicable("no nn.Linear or nn.LSTM layer: dynamic quantization has nothing to do")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        quantized = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            copy.deepcopy(ctx.model), targets, dtype=torch.qint8
        )
    engine = torch.backends.quantized.engine
    notes = [f"{TORCH_AO_NOTE}; engine {engine}; other layers stay float32"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        size = state_dict_bytes(quantized)
    # Packed int8 weights are not nn.Parameters: the count is the float model's.
    return Built(torch_predict(quantized), size, "state_dict", param_count(ctx.model), notes)


def build_bf16(ctx: BuildContext) -> Built:
    """The model cast to bfloat16; floating inputs cast on the way in."""
    import torch

    device = device_of(ctx.model)
    notes = []
    if device.type == "cuda":
        if not torch.cuda.is_bf16_supported():
            raise NotApplicable(f"{torch.cuda.get_device_name(device)} does not support bfloat16")
    elif device.type == "cpu" and not _native_bf16_cpu():
        notes.append(
            "this CPU has no native bfloat16 instructions (AVX512-BF16/AMX): torch "
            "emulates them, expect it slower than float32"
        )
    return _cast(ctx, torch.bfloat16, "bfloat16", notes)


def build_fp16(ctx: BuildContext) -> Built:
    """The model cast to float16; floating inputs cast on the way in."""
    import torch

    device = device_of(ctx.model)
    notes = []
    if device.type == "cpu" and not _cpu_flag("_is_amx_fp16_supported"):
        notes.append(
            "this CPU has no native float16 arithmetic (AMX-FP16): torch converts on the fly, "
            "expect it slower than float32"
        )
    return _cast(ctx, torch.float16, "float16", notes)


def _cast(ctx: BuildContext, dtype: Any, label: str, notes: list[str]) -> Built:
    import torch

    model = copy.deepcopy(ctx.model).to(dtype)
    try:  # a kernel missing for this dtype on this device shows here, not mid-measurement
        with torch.no_grad():
            model(*cast_inputs(ctx.inputs, dtype))
    except RuntimeError as exc:  # torch's "not implemented for 'Half'" is a subclass
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NotApplicable(f"the model does not run in {label} on this device: {first}") from exc
    size = state_dict_bytes(model)
    return Built(torch_predict(model, dtype), size, "state_dict", param_count(model), notes)


def _native_bf16_cpu() -> bool:
    return _cpu_flag("_is_avx512_bf16_supported") or _cpu_flag("_is_amx_tile_supported")


def _cpu_flag(name: str) -> bool:
    """A CPU capability torch reports (``torch.cpu._is_avx512_bf16_supported`` …)."""
    import torch

    probe = getattr(torch.cpu, name, None)
    try:
        return bool(probe()) if callable(probe) else False
    except RuntimeError:
        return False
