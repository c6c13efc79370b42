"""Pruning that removes structure: channels and neurons go (Torch-Pruning), and 2:4 sparsity.

Masking weights to zero leaves the same dense matrices, the same FLOPs and the
same joules; here the pruned layers are rebuilt smaller, so the parameter count
and the size drop. Layers whose outputs carry the model's output dimension and
embeddings are never pruned, so the output keeps its shape (in a transformer this
leaves the feed-forward inner width as what is pruned).

Lazy imports: torch (~1 s) and torch-pruning are imported inside the functions that use
them, so importing this module stays cheap.
"""

from __future__ import annotations

import copy
from typing import Any

from greenml.compress.tensors import (
    cast_inputs,
    device_of,
    first_tensor,
    param_count,
    state_dict_bytes,
    torch_predict,
)
from greenml.compress.train import distill_into
from greenml.compress.variants import BuildContext, Built
from greenml.errors import CompressError, NotApplicable

SPARSE24_MIN_CAPABILITY = (8, 0)


def build_prune(ctx: BuildContext) -> Built:
    """Remove ``prune_ratio`` of the channels of each prunable group (L2 magnitude).

    With training data the pruned model is fine-tuned by distillation from the
    baseline for ``finetune_epochs``; without, it is measured as pruned.

    Raises:
        NotApplicable: torch-pruning is missing, or nothing can be pruned
            without changing the output's shape.
    """
    try:
        import torch_pruning as tp
    except ImportError as exc:
        raise NotApplicable(
            f"torch-pruning is not installed ({exc}): pip install torch-pruning"
        ) from exc
    pruned = copy.deepcopy(ctx.model).eval()
    before = param_count(pruned)
    ignored = output_layers(pruned, ctx.output)
    pruner = tp.pruner.BasePruner(
        pruned,
        ctx.inputs,
        importance=tp.importance.MagnitudeImportance(p=2),
        pruning_ratio=ctx.options.prune_ratio,
        ignored_layers=ignored,
    )
    pruner.step()
    after = param_count(pruned)
    if after >= before:
        raise NotApplicable(
            "no layer can be pruned without changing the output's shape (every Linear/Conv "
            "feeds the output dimension)"
        )
    _check_shape(pruned, ctx)
    notes = [
        f"{ctx.options.prune_ratio:.0%} of the channels of each prunable layer removed: "
        f"{before:,} → {after:,} parameters"
    ]
    o = ctx.options
    if ctx.train_data is not None and o.finetune_epochs > 0 and _is_classifier(ctx.output):
        distill_into(pruned, ctx.model, ctx.train_data, o, o.finetune_epochs)
        notes.append(f"fine-tuned {o.finetune_epochs} epochs by distillation from the baseline")
    else:
        notes.append("not fine-tuned (fine-tuning needs train_data and a classifier's logits)")
    return Built(torch_predict(pruned), state_dict_bytes(pruned), "state_dict", after, notes)


def output_layers(model: Any, output: Any) -> list[Any]:
    """Layers pruning must not touch: embeddings, and Linear/Conv producing the output width."""
    from torch import nn

    out = first_tensor(output)
    widths = set()
    if out is not None and out.ndim >= 1:
        widths.add(int(out.shape[-1]))
        if out.ndim > 2:
            widths.add(int(out.shape[1]))  # channels of a conv feature map
    ignored = []
    for module in model.modules():
        feeds_output = (isinstance(module, nn.Linear) and module.out_features in widths) or (
            isinstance(module, nn.modules.conv._ConvNd) and module.out_channels in widths
        )
        if feeds_output or isinstance(module, nn.Embedding):
            ignored.append(module)
    return ignored


def build_sparse24(ctx: BuildContext) -> Built:
    """2:4 semi-structured sparsity (two of every four weights kept) on Linear layers, fp16.

    Raises:
        NotApplicable: No CUDA GPU of compute capability 8.0+ (the only place
            PyTorch has 2:4 kernels), or no Linear layer of a supported shape.
    """
    import torch
    from torch import nn

    device = device_of(ctx.model)
    if device.type != "cuda":
        raise NotApplicable(
            "2:4 semi-structured sparse kernels (cuSPARSELt/CUTLASS) exist only on NVIDIA GPUs "
            f"of compute capability 8.0+ (Ampere or newer); the model is on {device.type}"
        )
    capability = torch.cuda.get_device_capability(device)
    if capability < SPARSE24_MIN_CAPABILITY:
        raise NotApplicable(
            f"2:4 sparse kernels need compute capability 8.0+; this GPU has "
            f"{capability[0]}.{capability[1]}"
        )
    from torch.sparse import to_sparse_semi_structured

    model = copy.deepcopy(ctx.model).half().eval()
    done, dense_bytes = 0, 0
    for module in model.modules():
        if not isinstance(module, nn.Linear):
            continue
        rows, cols = module.weight.shape
        if rows % 64 or cols % 64:  # the kernels' tile constraints for fp16
            continue
        weight = module.weight.detach()
        module.weight = nn.Parameter(to_sparse_semi_structured(weight * mask_2_4(weight)))
        done += 1
        dense_bytes += weight.numel() * weight.element_size()
    if not done:
        raise NotApplicable("no Linear layer with both dimensions a multiple of 64")
    notes = [f"{done} Linear layer(s) 2:4-sparse in float16 (magnitude: 2 of each 4 kept)"]
    try:
        size, source = state_dict_bytes(model), "state_dict"
    except Exception:  # sparse tensor subclasses may not serialize
        size = state_dict_bytes(copy.deepcopy(ctx.model).half()) - dense_bytes * 7 // 16
        source = "estimated (values + 2-bit metadata of the sparse layers)"
    predict = torch_predict(model, torch.float16)
    predict(*cast_inputs(ctx.inputs, torch.float16))  # the shape constraints show here
    return Built(predict, size, source, param_count(model), notes)


def mask_2_4(weight: Any) -> Any:
    """A 0/1 mask keeping the 2 largest of each 4 consecutive weights along the input dim."""
    rows, cols = weight.shape
    groups = weight.abs().reshape(rows, cols // 4, 4)
    keep = groups.topk(2, dim=-1).indices
    mask = groups.new_zeros(groups.shape).scatter_(-1, keep, 1.0)
    return mask.reshape(rows, cols)


def _check_shape(pruned: Any, ctx: BuildContext) -> None:
    import torch

    with torch.no_grad():
        out = first_tensor(pruned(*ctx.inputs))
    expected = first_tensor(ctx.output)
    if out is None or expected is None or out.shape != expected.shape:
        got = None if out is None else tuple(out.shape)
        want = None if expected is None else tuple(expected.shape)
        raise CompressError(f"pruning changed the output shape from {want} to {got}")


def _is_classifier(output: Any) -> bool:
    logits = first_tensor(output)
    return logits is not None and logits.ndim == 2 and logits.is_floating_point()
