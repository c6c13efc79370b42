"""What one compressed variant is: how it was built, and what it measured.

A technique (``int8``, ``prune`` …) is a builder: given a :class:`BuildContext`
it returns a :class:`Built` (a callable with the model's signature, its size and
notes) or raises :class:`NotApplicable` with the reason, which the report shows
as ``skipped``. The measurements fill a :class:`Variant`. The builders by name
are in :mod:`greenml.compress.techniques`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from greenml.compress.options import CompressOptions

Status = Literal["ok", "skipped", "failed"]
Predict = Callable[..., Any]
"""Takes the model's positional inputs (torch tensors), returns float32 torch outputs."""

BASELINE = "baseline"

@dataclass
class BuildContext:
    """What every builder gets.

    Attributes:
        model: The user's model, in eval mode; builders copy it, never change it.
        inputs: The example inputs, as positional arguments of the model.
        output: The model's output on ``inputs`` (the shape builders must keep).
        options: Tuning knobs (prune ratio, distillation temperature …).
        train_data: ``(inputs, labels)`` tensors or an iterable of such batches.
        student: A user-built student for distillation.
        cache: Shared between builders (the ONNX export, built once).
    """

    model: Any
    inputs: tuple[Any, ...]
    output: Any
    options: CompressOptions
    train_data: Any = None
    student: Any = None
    cache: dict[str, Any] = field(default_factory=dict)


@dataclass
class Built:
    """A built variant, before it is measured.

    Attributes:
        predict: Same call as the model; returns float32 torch outputs.
        size_bytes: Bytes of the serialized weights (state_dict, or ONNX file).
        size_source: How ``size_bytes`` was obtained.
        params: Number of parameters (``None`` where it does not apply: ONNX).
        notes: What the user should know about this variant.
    """

    predict: Predict
    size_bytes: int | None
    size_source: str
    params: int | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Variant:
    """One row of the result: a variant, its status and its measured figures.

    Energy is per 1,000 items (an item is one row of the example batch).
    ``energy_spread_rel`` is the round-to-round standard error (statistical);
    ``energy_uncertainty_rel`` is the Meter's own uncertainty for its method
    (systematic, shared by every variant measured with the same sensors).
    Latency is per call of one example batch of ``batch_size`` items.
    """

    name: str
    description: str
    status: Status = "ok"
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    accuracy_pct: float | None = None
    accuracy_drop_pp: float | None = None
    size_bytes: int | None = None
    size_source: str = ""
    params: int | None = None
    batch_size: int = 0
    calls: int = 0
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    throughput_items_per_s: float | None = None
    energy_per_1k_j: float | None = None
    energy_spread_rel: float | None = None
    energy_method: str = ""
    energy_uncertainty_rel: float | None = None
    build_energy_j: float | None = None
    build_duration_s: float | None = None
    pareto: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def fail(self, reason: str) -> None:
        """Mark the variant failed; what it measured so far is dropped."""
        self.status, self.reason = "failed", reason
        self.energy_per_1k_j = self.latency_p50_s = self.latency_p99_s = None
        self.throughput_items_per_s = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
