"""Child-process bodies for ledger tests (importable under the spawn start method)."""

from __future__ import annotations

import traceback
from typing import Any

from greenml.ledger import append

APPENDS_PER_WORKER = 25


def appender(ledger: str, worker: int, barrier: Any, errors: Any) -> None:
    """Append records as fast as possible alongside other processes."""
    try:
        barrier.wait(timeout=60)
        for i in range(APPENDS_PER_WORKER):
            append({"id": f"w{worker}r{i}", "energy_j": i / 3}, path=ledger)
    except Exception:
        errors.put(traceback.format_exc())
