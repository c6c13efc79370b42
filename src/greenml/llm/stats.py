"""``greenml llm stats``: per-token and per-request figures from the stored requests.

J per prompt token is the prefill energy over the prompt tokens; J per output
token the decode energy over the completion tokens. ``static_j`` is the requests' share
of the idle floor (drawn whether or not they came), ``dynamic_j`` the rest. Idle energy
belongs to no model or tenant: with ``--model`` or ``--tenant`` the idle and metered figures
stay those of the whole proxy (``scope`` says so), and ``attributed_j`` is the
filtered traffic's.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

from greenml.llm.records import IDLE


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (``q`` in 0..100), None for no values."""
    if not values:
        return None
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def compute_stats(
    rows: list[dict[str, Any]], *, model: str | None = None, tenant: str | None = None
) -> dict[str, Any]:
    """The figures of ``greenml llm stats`` over rows of ``llm_requests`` (all, idle included)."""
    idle_j = sum(r["energy_j"] for r in rows if r["status"] == IDLE)
    requests = [r for r in rows if r["status"] != IDLE]
    all_attributed = sum(r["energy_j"] for r in requests)
    chosen = [
        r for r in requests
        if (model is None or r["model"] == model) and (tenant is None or r["tenant"] == tenant)
    ]  # fmt: skip
    attributed = sum(r["energy_j"] for r in chosen)
    metered = all_attributed + idle_j
    prompt = sum(r["prompt_tokens"] or 0 for r in chosen)
    output = sum(r["completion_tokens"] or 0 for r in chosen)
    energies = [r["energy_j"] for r in chosen]
    co2 = [r["co2eq_g"] for r in chosen]
    static = sum(float(_extra(r).get("static_j") or 0.0) for r in chosen)
    latest = max(chosen, key=lambda r: r["ended_at"], default=None)
    n = len(chosen)
    return {
        "requests": n,
        "statuses": dict(Counter(r["status"] for r in chosen)),
        "j_per_prompt_token": sum(r["prefill_j"] for r in chosen) / prompt if prompt else None,
        "j_per_output_token": sum(r["decode_j"] for r in chosen) / output if output else None,
        "wh_per_1000_requests": attributed / n / 3.6 if n else None,
        "energy_j": {
            "p50": percentile(energies, 50),
            "p95": percentile(energies, 95),
            "p99": percentile(energies, 99),
        },
        "idle_share": idle_j / metered if metered > 0 else None,
        "attributed_j": attributed,
        "static_j": static,
        "dynamic_j": attributed - static,
        "idle_j": idle_j,
        "metered_j": metered,
        "uncertainty_j": math.sqrt(sum(r["uncertainty_j"] ** 2 for r in chosen)),
        "co2eq_g": sum(c for c in co2 if c is not None) if co2 and None not in co2 else None,
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "prefill_decode_ratio": {
            "estimate": None if latest is None else latest["ratio"],
            "spread": None if latest is None else latest["ratio_spread"],
        },
        "method": sorted({r["method"] for r in chosen}),
        "token_sources": dict(Counter(r["token_source"] for r in chosen)),
        "scope": "idle_j and metered_j: the whole proxy"
        if model is not None or tenant is not None
        else "all traffic through the proxy",
    }


def _extra(row: dict[str, Any]) -> dict[str, float]:
    """The ``extra`` JSON of a row (static and dynamic parts since the idle floor), or {}."""
    try:
        found = json.loads(row.get("extra") or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
