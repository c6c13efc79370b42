"""The savings policy: changes greenml carries out itself, kept in the config file.

``greenml savings apply ITEM`` writes one table per applied item under ``[policy]``::

    [policy.gpu-power-nvidia-a100]
    power_limit_w = 250.0
    gpu_model = "NVIDIA A100"
    workload = "train"
    applied_at = "2026-11-28T12:00:00+00:00"

Known settings: ``power_limit_w`` and ``gpu_clocks_mhz`` (within the GPU's bounds),
``batch_size``, ``when = "green"`` with ``deadline``, ``spot`` with
``checkpoint_interval_s``, ``cache``. An item with a ``workload`` applies to runs of
that name only. :func:`policy_block` is what a run records of the policy in force
(the ``policy`` block of its record): ``greenml run`` and ``greenml.Run`` both add it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

TABLE = "policy"
SETTINGS = {
    "power_limit_w": (float, 50.0, 1500.0),
    "gpu_clocks_mhz": (float, 100.0, 5000.0),
    "batch_size": (int, 1, 1 << 20),
    "checkpoint_interval_s": (float, 10.0, 7 * 86400.0),
}
FLAGS = ("spot", "cache")
TEXTS = ("when", "deadline", "gpu_model", "workload", "location", "applied_at", "title")


def check_item(item_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """One policy item's settings, checked against their bounds.

    Raises:
        ConfigError: An unknown setting, or a value out of bounds.
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key in SETTINGS:
            kind, low, high = SETTINGS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"policy {item_id}: {key} must be a number, not {value!r}")
            if not low <= value <= high:
                raise ConfigError(f"policy {item_id}: {key} {value} is outside {low:g}–{high:g}")
            out[key] = kind(value)
        elif key in FLAGS:
            if not isinstance(value, bool):
                raise ConfigError(f"policy {item_id}: {key} must be true or false")
            out[key] = value
        elif key in TEXTS:
            out[key] = str(value)
        else:
            raise ConfigError(f"policy {item_id}: unknown setting {key!r}")
    if "when" in out and out["when"] != "green":
        raise ConfigError(f"policy {item_id}: when must be \"green\", not {out['when']!r}")
    return out


def load_policy(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The policy items of the config file (``{}`` without a ``[policy]`` table).

    Raises:
        ConfigError: The file cannot be read, or a policy item is malformed.
    """
    from greenml.config.settings import read_file

    table = read_file(path).get(TABLE) or {}
    if not isinstance(table, dict):
        raise ConfigError("[policy] in the config file must be a table of items")
    out = {}
    for item_id, values in table.items():
        if not isinstance(values, dict):
            raise ConfigError(f"[policy.{item_id}] must be a table")
        out[str(item_id)] = check_item(str(item_id), values)
    return out


def policy_block(
    name: str | None, path: Path | None = None, policy: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The ``policy`` block of a run named ``name``: the items in force, ``None`` when none.

    Never raises: a malformed policy gives a block that says so (the run is not harmed).
    """
    try:
        items = dict(policy) if policy is not None else load_policy(path)
    except ConfigError as exc:
        return {"status": "unreadable", "reason": str(exc), "items": []}
    chosen = {
        item_id: values for item_id, values in items.items()
        if not values.get("workload") or values.get("workload") == name
    }  # fmt: skip
    if not chosen:
        return None
    block: dict[str, Any] = {"status": "ok", "items": sorted(chosen)}
    for values in chosen.values():
        for key in (*SETTINGS, *FLAGS, "when", "deadline"):
            if key in values:
                block[key] = values[key]
    from greenml.config.settings import config_path

    block["source"] = str(path or config_path())
    block["note"] = NOTE
    return block


NOTE = ("recorded with the run: the run states the policy it ran under; the GPU settings are "
        "set by greenml gpu set-limit / lock-clocks, the start by greenml run --when green")
"""What the block says of who carries the settings out (this greenml records them)."""
