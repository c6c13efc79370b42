"""Diagnose a stored run: idle and under-used devices, input stalls, rightsizing, practice.

``diagnose_run(store, run_id)`` returns a :class:`Diagnosis` of :class:`Finding`
objects, each with its evidence and the energy (and dollars) at stake.
Imported lazily: ``import greenml.diagnose`` loads no numpy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from greenml.diagnose.findings import Diagnosis, Finding
    from greenml.diagnose.run import diagnose_run

__all__ = ["Diagnosis", "Finding", "diagnose_run"]


def __getattr__(name: str) -> Any:
    if name == "diagnose_run":
        from greenml.diagnose.run import diagnose_run

        return diagnose_run
    if name in ("Diagnosis", "Finding"):
        from greenml.diagnose import findings

        return getattr(findings, name)
    raise AttributeError(f"module 'greenml.diagnose' has no attribute {name!r}")
