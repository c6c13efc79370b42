"""Runs measured by other tools, read from their own files into greenml's store
(``greenml import codecarbon | carbontracker``).

Each parser turns the tool's output into run records (:mod:`greenml.importers.records`)
labelled with the tool's own method in the ``imported`` block; every energy
component is ``estimated`` from greenml's point of view, never upgraded to measured.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "parse_codecarbon": "greenml.importers.codecarbon",
    "parse_carbontracker": "greenml.importers.carbontracker",
    "store_imported": "greenml.importers.records",
}

__all__ = ["parse_carbontracker", "parse_codecarbon", "store_imported"]

if TYPE_CHECKING:
    from greenml.importers.carbontracker import parse_carbontracker
    from greenml.importers.codecarbon import parse_codecarbon
    from greenml.importers.records import store_imported

__getattr__ = lazy_exports(__name__, _LAZY)
