"""A digest of a run's power timeline, so that an edited sample is named at verification.

The ledger hashes the run record; the samples (the power timeline every
energy figure and chart rests on) are too many to put in it. Their digest
is: SHA-256 over one line per sample, in the store's order, of its fields as
compact JSON (floats written as Python's shortest repr, which is exact for a
double, so SQLite and PostgreSQL give the same digest). The record carries it
as ``samples_sha256`` when the run is stored; ``greenml ledger verify``
recomputes it from the samples as they are now.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

FIELD = "samples_sha256"


def samples_digest(samples: Iterable[Mapping[str, Any]]) -> str:
    """SHA-256 (hex) of the samples, each as ``[time_s, device, component, power_w, rest]``."""
    digest = hashlib.sha256()
    for s in samples:
        rest = {k: v for k, v in s.items() if k not in ("time_s", "device", "component", "power_w")}
        line = [s.get("time_s"), s.get("device"), s.get("component"), s.get("power_w"), rest]
        digest.update(json.dumps(line, sort_keys=True, separators=(",", ":")).encode())
        digest.update(b"\n")
    return digest.hexdigest()
