"""Standard documents written from stored runs: Hugging Face model-card metadata,
CycloneDX ML-BOM energy consumptions and BoAmps reports (``greenml export``).

Each builder takes typed run records (:class:`~greenml.record.RunRecord`) and
returns a plain JSON-ready dict in the format's own field names; the figures
keep greenml's provenance (method, uncertainty, intensity source) in the
fields or properties the format has for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "Footprint": "greenml.exports.footprint",
    "footprint": "greenml.exports.footprint",
    "co2_eq_emissions": "greenml.exports.model_card",
    "write_model_card": "greenml.exports.model_card",
    "cyclonedx_bom": "greenml.exports.cyclonedx",
    "boamps_report": "greenml.exports.boamps",
}

__all__ = [
    "Footprint",
    "boamps_report",
    "co2_eq_emissions",
    "cyclonedx_bom",
    "footprint",
    "write_model_card",
]

if TYPE_CHECKING:
    from greenml.exports.boamps import boamps_report
    from greenml.exports.cyclonedx import cyclonedx_bom
    from greenml.exports.footprint import Footprint, footprint
    from greenml.exports.model_card import co2_eq_emissions, write_model_card

__getattr__ = lazy_exports(__name__, _LAZY)
