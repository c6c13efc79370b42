"""Diagnose a stored run: idle and under-used devices, input stalls, rightsizing, practice.

``diagnose_run(store, run_id)`` returns a :class:`Diagnosis` of :class:`Finding`
objects, each with its evidence and the energy (and dollars) at stake.
Imported lazily: ``import greenml.diagnose`` loads no numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

if TYPE_CHECKING:
    from greenml.diagnose.findings import Diagnosis, Finding
    from greenml.diagnose.run import diagnose_run

__all__ = ["Diagnosis", "Finding", "diagnose_run"]


__getattr__ = lazy_exports(__name__, {
    "diagnose_run": "greenml.diagnose.run",
    "Diagnosis": "greenml.diagnose.findings",
    "Finding": "greenml.diagnose.findings",
})
