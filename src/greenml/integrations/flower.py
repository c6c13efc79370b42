"""Flower (``flwr``) client mod: energy per client per round, and the bytes exchanged.

Add it to a ``ClientApp``'s mods; each message the client handles is measured
in a Meter window of the :class:`~greenml.advise.federated.FederatedMeter`,
keyed by the client's node id and the round (the ``server-round`` of the
message's config records, else its group id), with the bytes of the array
records it received and the reply's::

    from flwr.clientapp import ClientApp
    from greenml.advise.federated import FederatedMeter
    from greenml.integrations.flower import energy_mod

    meter = FederatedMeter()
    app = ClientApp(mods=[energy_mod(meter)])
    ...
    meter.run.write("fl.json")   # then: greenml advise federated fl.json --link mobile

Written against Flower 1.42's ``Message``/``Context``/mod API (``Mod =
Callable[[Message, Context, ClientAppCallable], Message]``); it reads those
objects' attributes only, so importing this module does not import ``flwr``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from greenml.advise.federated import FederatedMeter


def _records_bytes(content: Any) -> float:
    records = getattr(content, "array_records", None) or {}
    return float(sum(record.count_bytes() for record in records.values()))


def _round(msg: Any) -> int:
    content = getattr(msg, "content", None)
    for config in (getattr(content, "config_records", None) or {}).values():
        value = config.get("server-round") if hasattr(config, "get") else None
        if isinstance(value, int):
            return value
    group = str(getattr(getattr(msg, "metadata", None), "group_id", "") or "")
    return int(group) if group.isdigit() else 0


def energy_mod(meter: FederatedMeter) -> Callable[[Any, Any, Callable[[Any, Any], Any]], Any]:
    """A Flower client mod measuring each message the client handles."""

    def mod(msg: Any, context: Any, call_next: Callable[[Any, Any], Any]) -> Any:
        client = str(getattr(context, "node_id", "?"))
        received = _records_bytes(getattr(msg, "content", None))
        with meter.client_round(client, _round(msg), received=received) as sent:
            reply = call_next(msg, context)
            has_content = getattr(reply, "has_content", None)
            if has_content is None or has_content():
                sent(_records_bytes(getattr(reply, "content", None)))
        return reply

    return mod
