"""The techniques by name: each a builder ``module:function``, imported when used.

Apart from :mod:`greenml.compress.variants` (the types the builders take and
give), so the builder modules and this registry never import each other.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from greenml.compress.variants import BASELINE, BuildContext, Built

# technique name → (module:function of its builder, what it does)
TECHNIQUES: dict[str, tuple[str, str]] = {
    "int8": ("greenml.compress.quantize:build_int8", "dynamic INT8 quantization (torch.ao)"),
    "bf16": ("greenml.compress.quantize:build_bf16", "bfloat16 weights and activations"),
    "fp16": ("greenml.compress.quantize:build_fp16", "float16 weights and activations"),
    "prune": ("greenml.compress.prune:build_prune", "structured pruning (Torch-Pruning)"),
    "sparse24": ("greenml.compress.prune:build_sparse24", "2:4 semi-structured sparsity"),
    "distill": ("greenml.compress.distill:build_distill", "knowledge distillation"),
    "onnx": ("greenml.compress.onnx_export:build_onnx", "ONNX Runtime (fp32)"),
    "onnx-int8": ("greenml.compress.onnx_export:build_onnx_int8", "ONNX Runtime dynamic INT8"),
}


def describe(name: str) -> str:
    """What a technique does, in a few words."""
    if name == BASELINE:
        return "the model as given"
    return TECHNIQUES[name][1]


def load_builder(name: str) -> Callable[[BuildContext], Built]:
    """The builder function of a technique (its module imported now)."""
    module, _, attribute = TECHNIQUES[name][0].partition(":")
    builder: Callable[[BuildContext], Built] = getattr(importlib.import_module(module), attribute)
    return builder
