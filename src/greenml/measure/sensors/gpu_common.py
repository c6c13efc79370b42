"""What the GPU sensors share: read every GPU, a failing one a gap, a lost one left alone.

:class:`~greenml.measure.sensors.nvml.NvmlSensor` and
:class:`~greenml.measure.sensors.amdsmi_gpu.AmdGpuSensor` read their GPUs the
same way (:func:`read_each`); each supplies only its library's exception type
and what a failure means (its text, and whether the GPU is gone for good).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

from greenml.errors import SensorError
from greenml.measure.sensors.base import Device


class ReadableGpu(Protocol):
    """A GPU as a sensor keeps it: its Device, and whether it was lost."""

    device: Device
    lost: bool


G = TypeVar("G", bound=ReadableGpu)


def read_each(
    gpus: Sequence[G],
    read: Callable[[G], Any],
    failure: type[BaseException],
    on_failure: Callable[[G, BaseException], str],
    what: str = "GPU",
) -> dict[str, Any]:
    """``read`` each GPU not lost yet; {device key: value}.

    A GPU whose read raises ``failure`` is a gap (``on_failure`` describes the
    error, and may mark the GPU lost so it is not asked again); a read that
    returns None is a gap too.

    Raises:
        SensorError: GPUs were asked for and none could be read (the reasons named).
    """
    out: dict[str, Any] = {}
    errors: list[str] = []
    for gpu in (g for g in gpus if not g.lost):
        try:
            value = read(gpu)
        except failure as exc:
            errors.append(f"{gpu.device.key}: {on_failure(gpu, exc)}")
            continue
        if value is not None:
            out[gpu.device.key] = value
    if gpus and not out:
        raise SensorError(f"no {what} could be read: {'; '.join(errors) or 'all are lost'}")
    return out
