"""How greenml combines the uncertainties of figures it adds up: one rule, used everywhere.

An error shared by the parts of a sum — the same CPU power model, the same GPU
counter's stated accuracy, the same grid-intensity figure — is **fully
correlated**: it moves every part the same way, so the absolute uncertainties of
parts with the same *source* **add linearly**. Errors of different sources are
independent and combine **in quadrature** (root of the sum of squares)::

    u(total) = √( Σ_sources ( Σ_parts of that source |u_part| )² )

A source is what produced the error: for energy, the set of (method, device
model) pairs that measured a run or a node; for carbon, the intensity source and
location. Four nodes sharing one CPU model are one source (linear: ±50 % stays
±50 %); a GPU counter and a CPU model are two (quadrature). Used by a run's
components, a job's nodes (``jobs show``) and a report's runs (``report --job``),
so the same runs get the same ± wherever they are added.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping
from typing import Any


def combine(parts: Iterable[tuple[Hashable, float]]) -> float:
    """The absolute uncertainty of a sum of ``(source, absolute uncertainty)`` parts."""
    by_source: dict[Hashable, float] = {}
    for source, uncertainty in parts:
        by_source[source] = by_source.get(source, 0.0) + abs(uncertainty)
    return math.sqrt(sum(u * u for u in by_source.values()))


def energy_source(devices: Iterable[Mapping[str, Any]]) -> Hashable:
    """The error source of an energy figure: its devices' (method, model) pairs."""
    return frozenset((str(d.get("method") or "?"), str(d.get("name") or "?")) for d in devices)
