"""The calls and tool calls of one workflow, and their totals (measured apart from estimated).

Measured uncertainties add in quadrature (independent sensors); estimated ones
add linearly (one model, its errors are shared by every call). Knows nothing of
runs: :mod:`greenml.llm.remote.workflow` routes calls here, and ``greenml run``
builds one from its program's ``llm_call`` events.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Any

from greenml.llm.remote.calls import LlmCall

MAX_CALLS_KEPT = 1000
"""Calls listed one by one in a record's ``workflow`` block; beyond, only the totals."""


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

    @classmethod
    def from_events(cls, calls: list[dict[str, Any]], tools: list[tuple[str, float]]) -> Collector:
        """The workflow of a program run by ``greenml run``, from its ``llm_call`` events."""
        found = cls(None)
        fields = set(LlmCall.__dataclass_fields__)
        for doc in calls:
            try:
                found.add_call(LlmCall(**{k: v for k, v in doc.items() if k in fields}))
            except TypeError:
                continue  # a call written by another greenml: left out, never fatal
        found.tools = list(tools)
        return found

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
