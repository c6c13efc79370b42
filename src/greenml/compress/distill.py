"""Knowledge distillation into a smaller student, measured like every other variant.

The student is the user's, or by default a narrower copy of an ``nn.Sequential``
MLP (hidden widths × ``student_width``, fresh weights). Training needs labelled
data: without ``train_data`` the technique is skipped, and says so.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from greenml.compress.options import CompressOptions
from greenml.compress.tensors import device_of, first_tensor, param_count, state_dict_bytes
from greenml.compress.tensors import torch_predict as _predict
from greenml.compress.train import distill_into
from greenml.compress.variants import BuildContext, Built
from greenml.errors import NotApplicable

# Layers a narrower copy can rebuild: the rest must hold no parameters.
_RESIZABLE = ("Linear", "BatchNorm1d", "LayerNorm")


def build_distill(ctx: BuildContext) -> Built:
    """Train the student on soft targets (temperature T, weight α) plus the hard labels.

    Raises:
        NotApplicable: No training data; no student given and no default one
            for this model; the model's output is not classifier logits.
    """
    if ctx.train_data is None:
        raise NotApplicable("needs labelled training data (train_data) to train the student")
    logits = first_tensor(ctx.output)
    if logits is None or logits.ndim != 2 or not logits.is_floating_point():
        raise NotApplicable(
            "distillation here trains a classifier: the model must return logits of shape "
            "(batch, classes)"
        )
    notes = []
    if ctx.student is not None:
        student = copy.deepcopy(ctx.student).to(device_of(ctx.model))
        notes.append("student given by the user")
    else:
        student = narrower_copy(ctx.model, ctx.options)
        notes.append(f"default student: the MLP at {ctx.options.student_width:g}× width")
    teacher_params, student_params = param_count(ctx.model), param_count(student)
    loss = distill_into(student, ctx.model, ctx.train_data, ctx.options, ctx.options.distill_epochs)
    o = ctx.options
    notes.append(
        f"{o.distill_epochs} epochs, T={o.temperature:g}, α={o.alpha:g} on soft targets, "
        f"final loss {loss:.3g}; {student_params:,} parameters vs the teacher's {teacher_params:,}"
    )
    return Built(_predict(student), state_dict_bytes(student), "state_dict", student_params, notes)


def narrower_copy(model: Any, options: CompressOptions) -> Any:
    """An ``nn.Sequential`` MLP with hidden widths scaled by ``options.student_width``.

    The input and output widths are kept; the weights are freshly initialized.

    Raises:
        NotApplicable: The model is not a flat ``nn.Sequential`` of Linear,
            BatchNorm1d, LayerNorm and parameter-free layers, or has no hidden layer.
    """
    import torch
    from torch import nn

    if not isinstance(model, nn.Sequential):
        raise NotApplicable(
            f"no student given, and the default (a narrower copy) needs an nn.Sequential MLP; "
            f"this model is a {type(model).__name__}: pass student="
        )
    linears = [m for m in model if isinstance(m, nn.Linear)]
    if len(linears) < 2:
        raise NotApplicable("no student given, and the MLP has no hidden layer to narrow")
    for layer in model:
        kind = type(layer).__name__
        if kind not in _RESIZABLE and any(True for _ in layer.parameters()):
            raise NotApplicable(
                f"no student given, and the default narrower copy cannot resize a {kind} layer"
            )
    torch.manual_seed(options.seed)
    last = linears[-1]
    width: int | None = None  # the current feature width of the copy
    layers: list[nn.Module] = []
    for layer in model:
        if isinstance(layer, nn.Linear):
            out = layer.out_features
            if layer is not last:
                out = max(1, math.ceil(out * options.student_width))
            layers.append(nn.Linear(width or layer.in_features, out, bias=layer.bias is not None))
            width = out
        elif isinstance(layer, nn.BatchNorm1d):
            layers.append(nn.BatchNorm1d(width or layer.num_features))
        elif isinstance(layer, nn.LayerNorm):
            layers.append(nn.LayerNorm(width or layer.normalized_shape[-1]))
        else:
            layers.append(copy.deepcopy(layer))
    return nn.Sequential(*layers).to(device_of(model))
