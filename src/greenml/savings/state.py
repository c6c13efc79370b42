"""What the store keeps of savings: the last plan, the applied items, the verified savings.

All in the store's state table (namespace ``savings``), so a team sharing a store shares
its plan and its proof: ``plan`` (the last plan's JSON), ``applied`` (item id → what was
applied, when, and the runs before), ``verified`` (saving id → the document the ledger hashed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from greenml.errors import ConfigError
from greenml.ledger.kinds import NAMESPACE, VERIFIED

if TYPE_CHECKING:
    from greenml.store.repository import Store

PLAN = "plan"
APPLIED = "applied"


def save_plan(store: Store, plan: dict[str, Any]) -> None:
    store.put_state(NAMESPACE, PLAN, plan)


def stored_plan(store: Store) -> dict[str, Any]:
    """The last plan made against this store.

    Raises:
        ConfigError: No plan yet.
    """
    found = store.get_state(NAMESPACE, PLAN)
    if not found:
        raise ConfigError("no savings plan in this store yet: run greenml savings plan first")
    return found


def plan_item(store: Store, item_id: str) -> dict[str, Any]:
    """One item of the last plan.

    Raises:
        ConfigError: No plan, or no such item (the known ids are named).
    """
    plan = stored_plan(store)
    for item in plan.get("items") or []:
        if item.get("id") == item_id:
            return dict(item)
    known = ", ".join(str(i.get("id")) for i in plan.get("items") or []) or "none"
    raise ConfigError(f"no item {item_id!r} in the last savings plan (items: {known})")


def applied(store: Store) -> dict[str, dict[str, Any]]:
    return dict((store.get_state(NAMESPACE, APPLIED) or {}).get("items") or {})


def put_applied(store: Store, items: dict[str, dict[str, Any]]) -> None:
    store.put_state(NAMESPACE, APPLIED, {"items": items})


def verified(store: Store) -> dict[str, dict[str, Any]]:
    return dict((store.get_state(NAMESPACE, VERIFIED) or {}).get("savings") or {})


def put_verified(store: Store, savings: dict[str, dict[str, Any]]) -> None:
    store.put_state(NAMESPACE, VERIFIED, {"savings": savings})
