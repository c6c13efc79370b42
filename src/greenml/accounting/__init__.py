"""Carbon and cost accounting: joules into grams of CO2eq and dollars, with sources."""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "ConstantSource": "greenml.accounting.intensity",
    "GridIntensity": "greenml.accounting.intensity",
    "IntensitySource": "greenml.accounting.intensity",
    "Carbon": "greenml.accounting.carbon",
    "carbon_of": "greenml.accounting.carbon",
    "Cost": "greenml.accounting.cost",
    "cost_of": "greenml.accounting.cost",
    "equivalences": "greenml.accounting.equivalences",
    "load_trace": "greenml.accounting.traces",
    "instance_price": "greenml.accounting.instances",
}

__all__ = [
    "Carbon",
    "ConstantSource",
    "Cost",
    "GridIntensity",
    "IntensitySource",
    "carbon_of",
    "cost_of",
    "equivalences",
    "instance_price",
    "load_trace",
]

if TYPE_CHECKING:
    from greenml.accounting.carbon import Carbon, carbon_of
    from greenml.accounting.cost import Cost, cost_of
    from greenml.accounting.equivalences import equivalences
    from greenml.accounting.instances import instance_price
    from greenml.accounting.intensity import ConstantSource, GridIntensity, IntensitySource
    from greenml.accounting.traces import load_trace


__getattr__ = lazy_exports(__name__, _LAZY)
