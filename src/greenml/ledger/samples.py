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
import math
from collections.abc import Iterable, Mapping
from typing import Any

FIELD = "samples_sha256"


def samples_digest(samples: Iterable[Mapping[str, Any]]) -> str:
    """SHA-256 (hex) of the samples, each as ``[time_s, device, component, power_w, rest]``."""
    return TimelineDigest().add(samples).hexdigest()


class TimelineDigest:
    """:func:`samples_digest` fed as samples are stored, so that a run's end need not read
    them back. The store orders samples by time, then by insertion: the digest is the
    stored timeline's while each sample comes no earlier than the one before (``exact``);
    a clock stepped back makes it inexact, and the stored samples are digested instead."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()
        self._last = -math.inf
        self.exact = True

    def add(self, samples: Iterable[Mapping[str, Any]]) -> TimelineDigest:
        """Digest more samples (as ``Store.samples`` gives them), in the order stored."""
        for s in samples:
            t = s.get("time_s")
            if isinstance(t, int | float):
                if t < self._last:
                    self.exact = False
                self._last = max(self._last, t)
            rest = {k: v for k, v in s.items()
                    if k not in ("time_s", "device", "component", "power_w")}  # fmt: skip
            line = [t, s.get("device"), s.get("component"), s.get("power_w"), rest]
            self._hash.update(json.dumps(line, sort_keys=True, separators=(",", ":")).encode())
            self._hash.update(b"\n")
        return self

    def copy(self) -> TimelineDigest:
        """An independent digest of the same samples."""
        other = TimelineDigest()
        other._hash, other._last, other.exact = self._hash.copy(), self._last, self.exact
        return other

    def hexdigest(self) -> str:
        """The digest so far (64 hex digits)."""
        return self._hash.hexdigest()
