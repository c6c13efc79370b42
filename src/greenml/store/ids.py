"""Run ids: short random hex strings, unique enough for one team's store."""

from __future__ import annotations

import uuid


def new_run_id() -> str:
    """A fresh run id: 12 hex characters (48 random bits)."""
    return uuid.uuid4().hex[:12]
