"""A workflow: one agent execution's model calls, tool calls and local compute, rolled up.

Calls reach every :class:`Workflow` open in the current context and the open
:class:`greenml.Run` (its stored record gets a ``workflow`` block). The total
keeps the measured part (calls a greenml proxy measured; a Run's own measured
compute) apart from the estimated one. Measured uncertainties add in quadrature
(independent sensors); estimated ones add linearly (one model, its errors are
shared by every call).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from greenml.llm.remote.calls import LlmCall

if TYPE_CHECKING:
    from greenml.measure.meter import Meter

MAX_CALLS_KEPT = 1000
"""Calls listed one by one in a record's ``workflow`` block; beyond, only the totals."""

_open: contextvars.ContextVar[tuple[Collector, ...]] = contextvars.ContextVar(
    "greenml_llm_workflows", default=()
)
_run_collectors: weakref.WeakKeyDictionary[Any, Collector] = weakref.WeakKeyDictionary()
_run_lock = threading.Lock()


@dataclass
class Part:
    """Energy, CO2eq and water of the measured or of the estimated calls."""

    calls: int = 0
    energy_j: float = 0.0
    uncertainty_j: float = 0.0
    co2eq_g: float = 0.0
    co2eq_uncertainty_g: float = 0.0
    co2eq_unknown_calls: int = 0
    water_ml: float = 0.0
    water_unknown_calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class Total:
    """A workflow's roll-up: measured and estimated model calls, tool calls, local compute."""

    name: str | None
    measured: Part = field(default_factory=Part)
    estimated: Part = field(default_factory=Part)
    tool_calls: int = 0
    tool_seconds: float = 0.0
    local_energy_j: float | None = None
    local_uncertainty_j: float | None = None
    local_method: str | None = None

    @property
    def energy_j(self) -> float:
        return self.measured.energy_j + self.estimated.energy_j + (self.local_energy_j or 0.0)

    def describe(self) -> str:
        """One line for people."""
        m, e = self.measured, self.estimated
        local = (
            ""
            if self.local_energy_j is None
            else f"; local compute {self.local_energy_j:.4g} J ({self.local_method})"
        )
        return (
            f"workflow {self.name or '(unnamed)'}: {m.calls + e.calls} model calls, "
            f"{self.tool_calls} tool calls — measured {m.energy_j:.4g} ± {m.uncertainty_j:.2g} J, "
            f"estimated {e.energy_j:.4g} ± {e.uncertainty_j:.2g} J{local}; CO2eq measured "
            f"{m.co2eq_g:.3g} g, estimated {e.co2eq_g:.3g} g"
        )


class Collector:
    """The calls and tool calls of one workflow (thread-safe)."""

    def __init__(self, name: str | None) -> None:
        self.name = name
        self.calls: list[LlmCall] = []
        self.tools: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def add_call(self, call: LlmCall) -> None:
        with self._lock:
            self.calls.append(call)

    def add_tool(self, name: str, duration_s: float) -> None:
        with self._lock:
            self.tools.append((name, duration_s))

    def total(self) -> Total:
        with self._lock:
            calls, tools = list(self.calls), list(self.tools)
        total = Total(self.name, tool_calls=len(tools), tool_seconds=sum(d for _, d in tools))
        sq = 0.0
        for call in calls:
            part = total.measured if call.kind == "measured" else total.estimated
            part.calls += 1
            part.energy_j += call.energy_j
            if call.kind == "measured":
                sq += call.uncertainty_j**2
            else:
                part.uncertainty_j += call.uncertainty_j
            if call.co2eq_g is None:
                part.co2eq_unknown_calls += 1
            else:
                part.co2eq_g += call.co2eq_g
                part.co2eq_uncertainty_g += call.co2eq_uncertainty_g or 0.0
            if call.water_ml is None:
                part.water_unknown_calls += 1
            else:
                part.water_ml += call.water_ml
        total.measured.uncertainty_j = math.sqrt(sq)
        return total

    def block(self) -> dict[str, Any]:
        """The record's ``workflow`` block."""
        total = self.total()
        with self._lock:
            calls = list(self.calls)
        by_model: dict[str, dict[str, Any]] = {}
        for call in calls:
            row = by_model.setdefault(
                call.model,
                {
                    "calls": 0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "energy_j": 0.0,
                    "measured_calls": 0,
                },
            )
            row["calls"] += 1
            row["input_tokens"] += call.input_tokens
            row["output_tokens"] += call.output_tokens
            row["energy_j"] += call.energy_j
            row["measured_calls"] += call.kind == "measured"
        return {
            "name": self.name,
            "executions": 1,
            "calls": len(calls),
            "tool_calls": total.tool_calls,
            "tool_seconds": total.tool_seconds,
            "measured": total.measured.to_dict(),
            "estimated": total.estimated.to_dict(),
            "by_model": by_model,
            "call_list": [c.to_dict() for c in calls[:MAX_CALLS_KEPT]],
            "calls_not_listed": max(0, len(calls) - MAX_CALLS_KEPT),
            "uncertainty_note": "measured: quadrature sum; estimated: linear sum (shared model)",
        }


def targets() -> tuple[Collector, ...]:
    """The collectors a call made now belongs to: the open workflows and the open Run's."""
    run_collector = _for_run()
    return (*_open.get(), *((run_collector,) if run_collector is not None else ()))


def emit(call: LlmCall, to: tuple[Collector, ...] | None = None) -> None:
    """Hand a call to ``to`` (a stream's, taken when it began), else to :func:`targets`."""
    for collector in targets() if to is None else to:
        collector.add_call(call)


def emit_tool(name: str, duration_s: float) -> None:
    """Record a tool call in every open workflow and the open Run."""
    for collector in _open.get():
        collector.add_tool(name, duration_s)
    run_collector = _for_run()
    if run_collector is not None:
        run_collector.add_tool(name, duration_s)


@contextlib.contextmanager
def tool(name: str) -> Iterator[None]:
    """Time a tool call of the open workflows (its energy is the local compute's)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        emit_tool(name, time.perf_counter() - start)


def _for_run() -> Collector | None:
    from greenml.run.inprocess import current_run

    run = current_run()
    if run is None:
        return None
    with _run_lock:
        collector = _run_collectors.get(run)
        if collector is None:
            collector = _run_collectors[run] = Collector(run.name)
            providers = getattr(run, "block_providers", None)
            if isinstance(providers, dict):
                providers["workflow"] = collector.block
    return collector


class Workflow:
    """Roll up the model and tool calls made inside ``with Workflow("name") as wf:``.

    Args:
        name: The workflow's name.
        echo: Print the total on stderr when the block ends.
        measure_local: Also measure this machine's compute while the block runs
            (a :class:`~greenml.measure.meter.Meter` on its GPUs and CPU).
        meter: Measure local compute with this Meter instead (left open).
    """

    def __init__(
        self,
        name: str | None = None,
        *,
        echo: bool = True,
        measure_local: bool = False,
        meter: Meter | None = None,
    ) -> None:
        self.collector = Collector(name)
        self.echo = echo
        self._meter, self._own_meter = meter, measure_local and meter is None
        self._window = f"greenml-workflow-{id(self)}"
        self._local: tuple[float, float, str] | None = None
        self._token: contextvars.Token[tuple[Collector, ...]] | None = None

    @property
    def calls(self) -> list[LlmCall]:
        return list(self.collector.calls)

    def total(self) -> Total:
        """The roll-up so far (local compute once the block has ended)."""
        total = self.collector.total()
        if self._local is not None:
            total.local_energy_j, total.local_uncertainty_j, total.local_method = self._local
        return total

    def block(self) -> dict[str, Any]:
        """The model and tool calls as a ``workflow`` record block."""
        return self.collector.block()

    def __enter__(self) -> Workflow:
        if self._own_meter:
            from greenml.measure.meter import Meter

            self._meter = Meter()
        if self._meter is not None:
            self._meter.begin_window(self._window)
        self._token = _open.set((*_open.get(), self.collector))
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _open.reset(self._token)
            self._token = None
        if self._meter is not None:
            self._local = _local_part(self._meter, self._window)
            if self._own_meter:
                self._meter.close()
                self._meter = None
        if self.echo:
            print(f"greenml: {self.total().describe()}", file=sys.stderr)


def _local_part(meter: Meter, window: str) -> tuple[float, float, str] | None:
    from greenml.measure.measurement import weakest_method

    try:
        m = meter.end_window(window)
    except Exception as exc:  # a failing sensor never breaks the user's program
        print(f"greenml: local compute not measured: {exc!r}", file=sys.stderr)
        return None
    methods = [c.method for c in m.components.values()]
    return m.total_j, m.total_j * m.uncertainty_rel, weakest_method(methods) if methods else "none"
