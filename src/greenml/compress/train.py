"""Knowledge-distillation training: the loss, the batches, the loop.

The loss is Hinton et al.'s (2015): ``α·T²·KL(softmax(t/T) ‖ softmax(s/T)) +
(1−α)·CE(s, y)``, where ``t`` are the teacher's logits, ``s`` the student's and
``y`` the hard labels. It assumes a classifier: logits of shape ``(N, C)`` and
integer labels.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from greenml.compress.options import CompressOptions
from greenml.errors import ConfigError


def kd_loss(student_logits: Any, teacher_logits: Any, labels: Any, temperature: float,
            alpha: float) -> Any:  # fmt: skip
    """``α·T²·KL(soft) + (1−α)·CE(hard)``, averaged over the batch."""
    import torch.nn.functional as F

    t = temperature
    soft = F.kl_div(
        F.log_softmax(student_logits / t, dim=-1),
        F.softmax(teacher_logits / t, dim=-1),
        reduction="batchmean",
    )
    hard = F.cross_entropy(student_logits, labels)
    return alpha * t * t * soft + (1.0 - alpha) * hard


def batches(train_data: Any, options: CompressOptions, epoch: int) -> Iterator[tuple[Any, Any]]:
    """``(inputs, labels)`` batches of one epoch.

    ``train_data`` is either a pair of tensors ``(inputs, labels)`` (shuffled
    into mini-batches of ``options.batch_size``) or an iterable of
    ``(inputs, labels)`` batches, such as a DataLoader, iterated once per epoch.
    ``inputs`` may be a tensor or a tuple of tensors.

    Raises:
        ConfigError: ``train_data`` has neither shape.
    """
    import torch

    if _is_tensor_pair(train_data):
        inputs, labels = train_data
        generator = torch.Generator().manual_seed(options.seed + epoch)
        order = torch.randperm(int(labels.shape[0]), generator=generator)
        for start in range(0, len(order), options.batch_size):
            idx = order[start : start + options.batch_size].to(labels.device)
            if isinstance(inputs, torch.Tensor):
                yield inputs[idx], labels[idx]
            else:
                yield tuple(x[idx] for x in inputs), labels[idx]
        return
    try:
        iterator = iter(train_data)
    except TypeError:
        raise ConfigError(
            "train_data must be (inputs, labels) tensors or an iterable of (inputs, labels) "
            f"batches, got {type(train_data).__name__}"
        ) from None
    for batch in iterator:
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise ConfigError("each train_data batch must be an (inputs, labels) pair")
        yield batch[0], batch[1]


def distill_into(student: Any, teacher: Any, train_data: Any, options: CompressOptions,
                 epochs: int) -> float:  # fmt: skip
    """Train ``student`` in place against ``teacher``'s soft targets and the labels.

    Returns:
        The mean loss of the last epoch.
    """
    import torch

    torch.manual_seed(options.seed)
    teacher.eval()
    student.train()
    optimizer = torch.optim.Adam(student.parameters(), lr=options.learning_rate)
    last = float("nan")
    for epoch in range(epochs):
        total, count = 0.0, 0
        for inputs, labels in batches(train_data, options, epoch):
            args = inputs if isinstance(inputs, tuple) else (inputs,)
            with torch.no_grad():  # not inference_mode: the targets enter the loss's graph
                teacher_logits = teacher(*args)
            loss = kd_loss(student(*args), teacher_logits, labels, options.temperature,
                           options.alpha)  # fmt: skip
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * int(labels.shape[0])
            count += int(labels.shape[0])
        if count == 0:
            raise ConfigError("train_data yielded no batch")
        last = total / count
    student.eval()
    return last


def _is_tensor_pair(data: Any) -> bool:
    import torch

    if not (isinstance(data, tuple) and len(data) == 2):
        return False
    inputs, labels = data
    if not isinstance(labels, torch.Tensor):
        return False
    if isinstance(inputs, torch.Tensor):
        return True
    return isinstance(inputs, tuple) and all(isinstance(x, torch.Tensor) for x in inputs)
