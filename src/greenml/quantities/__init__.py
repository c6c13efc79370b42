"""Quantities as people read them: energy, durations and moments (more units move here).

A ground-floor package: it imports nothing from greenml, so every layer (the
terminal, reports, the scheduler) can format the same way.
"""

from __future__ import annotations

from greenml.quantities.durations import clock_text, utc_text
from greenml.quantities.energy import J_PER_KWH, joules_text

__all__ = ["J_PER_KWH", "clock_text", "joules_text", "utc_text"]
