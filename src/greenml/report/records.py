"""What one run record says, read defensively: energy, PUE, carbon, cost, devices, times.

Pure functions over the run record dict (:mod:`greenml.store.record`); a block
that is missing or not ``ok`` gives ``None`` and a reason, never a zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from greenml.errors import ConfigError
from greenml.hardware.gpu import gpu_spec

NO_PUE = "not given: no facility overhead counted"


@dataclass(frozen=True)
class Missing:
    """A run whose figure is unknown, and why."""

    run_id: str
    status: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"run_id": self.run_id, "status": self.status, "reason": self.reason}


def energy_known(record: dict[str, Any]) -> bool:
    """Whether the run has any measured or estimated device energy."""
    energy = record.get("energy") or {}
    return bool(energy.get("components"))


def it_energy(record: dict[str, Any]) -> tuple[float, float]:
    """IT energy and its absolute uncertainty, in joules (0, 0 when unknown)."""
    energy = record.get("energy") or {}
    total = float(energy.get("total_j") or 0.0)
    rel = float(energy.get("uncertainty_rel") or 0.0)
    return total, total * rel


def pue(record: dict[str, Any]) -> tuple[float, str]:
    """The PUE the run was accounted with, from its carbon or cost block; 1.0 if none."""
    for key in ("carbon", "cost"):
        block = record.get(key) or {}
        if block.get("status") == "ok" and block.get("pue") is not None:
            return float(block["pue"]), str(block.get("pue_source") or "")
    return 1.0, NO_PUE


def carbon(record: dict[str, Any]) -> tuple[float, float] | Missing:
    """kg CO2eq and its absolute uncertainty, or why it is unknown."""
    block = record.get("carbon")
    if not isinstance(block, dict):
        return Missing(record["id"], "unknown", "no carbon block (run stored without accounting)")
    if block.get("status", "ok") != "ok" or block.get("kg") is None:
        reason = str(block.get("reason") or block.get("hint") or "")
        return Missing(record["id"], str(block.get("status", "unknown")), reason)
    kg = float(block["kg"])
    return kg, kg * float(block.get("uncertainty_rel") or 0.0)


def cost(record: dict[str, Any]) -> float | Missing:
    """US dollars, or why the cost is unknown."""
    block = record.get("cost")
    if not isinstance(block, dict):
        return Missing(record["id"], "unknown", "no cost block")
    if block.get("status", "ok") != "ok" or block.get("usd") is None:
        reason = str(block.get("reason") or block.get("hint") or "")
        return Missing(record["id"], str(block.get("status", "unknown")), reason)
    return float(block["usd"])


def devices(record: dict[str, Any]) -> list[tuple[str, str, str, float, float, str]]:
    """Every measured device: (component, key, name, joules, uncertainty_rel, method)."""
    out = []
    components = (record.get("energy") or {}).get("components") or {}
    for comp, block in components.items():
        for key, dev in (block.get("devices") or {}).items():
            out.append(
                (
                    str(comp),
                    str(key),
                    str(dev.get("name") or key),
                    float(dev.get("energy_j") or 0.0),
                    float(dev.get("uncertainty_rel") or 0.0),
                    str(dev.get("method") or "unknown"),
                )
            )
    return out


def gpu_type(name: str) -> str:
    """A GPU's canonical table name (``H100 SXM``), or the name as reported."""
    try:
        return gpu_spec(name).name
    except ConfigError:
        return name


def timestamp(iso: str | None) -> float | None:
    """An ISO 8601 time from the record as Unix seconds."""
    return datetime.fromisoformat(iso).timestamp() if iso else None


def duration_s(record: dict[str, Any]) -> float | None:
    """Wall-clock seconds of the run: stored duration, else end − start, else ``None``."""
    if record.get("duration_s") is not None:
        return float(record["duration_s"])
    start, end = timestamp(record.get("started_at")), timestamp(record.get("ended_at"))
    if start is not None and end is not None:
        return end - start
    return None


def cpu_name(record: dict[str, Any]) -> str | None:
    """The CPU model from the environment, else from a measured CPU device."""
    model = ((record.get("environment") or {}).get("cpu") or {}).get("model")
    if model:
        return str(model)
    for comp, _key, name, *_ in devices(record):
        if comp == "cpu":
            return name.split(" (model")[0]
    return None


def label(record: dict[str, Any]) -> str:
    """Short label of a run for tables and figures: ``name (id)`` or the id."""
    name = record.get("name")
    return f"{name} ({record['id'][:8]})" if name else str(record["id"])


def block_figure(record: dict[str, Any], key: str, field: str) -> tuple[float, float] | Missing:
    """A figure of an optional block (``carbon_market.kg``, ``water.litres``, ``embodied.kg``)
    and its absolute uncertainty, or why it is unknown (an older record has no such block)."""
    block = record.get(key)
    if not isinstance(block, dict):
        return Missing(record["id"], "unknown", f"no {key} block (recorded by an older greenml)")
    value = block.get(field)
    if value is None or block.get("status", "ok") not in ("ok", "partial"):
        missing = "; ".join(block.get("missing") or [])
        reason = str(block.get("reason") or block.get("hint") or missing)
        return Missing(record["id"], str(block.get("status", "unknown")), reason)
    return float(value), float(value) * float(block.get("uncertainty_rel") or 0.0)
