"""``apply``: one plan item, with consent, as a policy in the config file and files for review.

An item greenml carries out (``action = policy``) becomes ``[policy.ITEM]`` in the config
file (:mod:`greenml.savings.policy_file`); an item outside greenml becomes files under the
output folder (:mod:`greenml.savings.artifacts`). The store remembers what was applied,
when, and the runs before it (the baseline ``verify`` compares against). ``undo`` removes
the policy and forgets the item; the files stay for the user to delete.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.savings import artifacts, state
from greenml.savings.policy import FLAGS, SETTINGS

if TYPE_CHECKING:
    from greenml.store.repository import Store

POLICY_KEYS = (*SETTINGS, *FLAGS, "when", "deadline", "gpu_model", "workload", "location")


@dataclass(frozen=True)
class Applied:
    """What ``apply`` did: the policy item written (if any) and the files written."""

    item_id: str
    policy: dict[str, Any] | None
    files: tuple[Path, ...]
    config: Path | None


def policy_settings(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``[policy.ITEM]`` settings of a plan item, ``None`` when greenml cannot do it."""
    if item.get("action") != "policy":
        return None
    settings = {k: v for k, v in (item.get("settings") or {}).items() if k in POLICY_KEYS}
    return settings or None


def artifact_texts(item: Mapping[str, Any]) -> dict[str, str]:
    """File name → text of the artifacts for a plan item (``{}``: none)."""
    import yaml

    kind = str(item.get("key", "")).split(":", 1)[0]
    name, settings = str(item["id"]), dict(item.get("settings") or {})
    out = {}
    for which in artifacts.ARTIFACTS.get(kind, ()):
        if which == "skypilot":
            out[f"{name}.skypilot.yaml"] = yaml.safe_dump(
                artifacts.skypilot(name, settings), sort_keys=False)  # fmt: skip
        elif which == "keda-scaledobject":
            out[f"{name}.keda.yaml"] = yaml.safe_dump(
                artifacts.keda_scaledobject(name, settings), sort_keys=False)  # fmt: skip
        elif which == "karpenter-nodepool":
            out[f"{name}.karpenter.yaml"] = yaml.safe_dump(
                artifacts.karpenter_nodepool(name, settings), sort_keys=False)  # fmt: skip
        elif which == "slurm" and settings.get("location"):
            out[f"{name}.slurm.sh"] = artifacts.slurm_line(name, settings)
    return out


def apply_item(store: Store, item_id: str, config: Path, out_dir: Path) -> Applied:
    """Apply one item of the last plan (the caller has asked the user's consent).

    Raises:
        ConfigError: No such item, advice only, or a file that cannot be written.
    """
    from greenml.savings.policy_file import write_item

    item = state.plan_item(store, item_id)
    settings = policy_settings(item)
    texts = artifact_texts(item)
    if settings is None and not texts:
        raise ConfigError(f"{item_id} is advice only ({item.get('title')}): nothing to apply")
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if settings is not None:
        write_item(config, item_id, {**settings, "applied_at": now})
    files = []
    if texts:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            for name, text in texts.items():
                (out_dir / name).write_text(text, encoding="utf-8")
                files.append(out_dir / name)
        except OSError as exc:
            raise ConfigError(f"cannot write {out_dir}: {exc.strerror or exc}") from None
    done = state.applied(store)
    done[item_id] = {
        "item": json.loads(json.dumps(item)), "applied_at": now, "policy": settings,
        "files": [str(f) for f in files], "baseline_runs": _baseline(item),
    }  # fmt: skip
    state.put_applied(store, done)
    return Applied(item_id, settings, tuple(files), config if settings is not None else None)


def _baseline(item: Mapping[str, Any]) -> list[str]:
    """The runs before the change: the evidence runs not already at the applied setting."""
    at = item.get("settings") or {}
    trial = set(at.get("trial_runs") or [])
    return [r for r in item.get("evidence_runs") or [] if r not in trial]


def undo_item(store: Store, item_id: str, config: Path) -> bool:
    """Remove an item's policy and forget it was applied; ``False`` when it was neither.

    Raises:
        ConfigError: The config file cannot be read or written.
    """
    from greenml.savings.policy_file import remove_item

    removed = remove_item(config, item_id)
    done = state.applied(store)
    known = done.pop(item_id, None) is not None
    if known:
        state.put_applied(store, done)
    return removed or known
