"""A workflow: one agent execution's model calls, tool calls and local compute, rolled up.

Calls reach every :class:`Workflow` open in the current context, and the run this
process is measured by as ``llm_call`` / ``tool_call`` events — one road for both
drivers: an open :class:`greenml.Run` takes them through its event listener,
``greenml run`` through its events file; either run's record gets a ``workflow`` block. The total
keeps the measured part (calls a greenml proxy measured; a Run's own measured
compute) apart from the estimated one. Measured uncertainties add in quadrature
(independent sensors); estimated ones add linearly (one model, its errors are
shared by every call).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from greenml.llm.remote.calls import LlmCall
from greenml.llm.remote.collector import Collector, Total

if TYPE_CHECKING:
    from greenml.measure.meter import Meter

_open: contextvars.ContextVar[tuple[Collector, ...]] = contextvars.ContextVar(
    "greenml_llm_workflows", default=()
)


def targets() -> tuple[Collector, ...]:
    """The collectors a call made now belongs to: the workflows open in this context."""
    return _open.get()


def emit(call: LlmCall, to: tuple[Collector, ...] | None = None) -> None:
    """Hand a call to ``to`` (a stream's, taken when it began), else to :func:`targets`,
    and to the run this process is measured by (an ``llm_call`` event)."""
    for collector in targets() if to is None else to:
        collector.add_call(call)
    _to_run("llm_call", call=call.to_dict())


def emit_tool(name: str, duration_s: float) -> None:
    """Record a tool call in every open workflow and the run this process is measured by."""
    for collector in _open.get():
        collector.add_tool(name, duration_s)
    _to_run("tool_call", name=name, duration_s=duration_s)


def _to_run(kind: str, **fields: Any) -> None:
    """An event for the run that measures this process (an open ``greenml.Run`` or the
    ``greenml run`` this program runs under); nothing without one."""
    from greenml.measure import events

    if events.enabled():
        events.emit(kind, **fields)


@contextlib.contextmanager
def tool(name: str) -> Iterator[None]:
    """Time a tool call of the open workflows (its energy is the local compute's)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        emit_tool(name, time.perf_counter() - start)


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
