"""CycloneDX ML-BOM (spec 1.6): a ``machine-learning-model`` component whose
``modelCard.considerations.environmentalConsiderations.energyConsumptions`` holds one
entry per lifecycle activity (training, fine-tuning, inference ...).

Each entry's ``activityEnergyCost`` is the runs' IT energy (kWh) and
``co2CostEquivalent`` their CO2eq (tCO2eq, PUE included as greenml accounts it).
The format has no field for how a figure was obtained, so greenml's provenance
(method, uncertainty, intensity source, run ids, boundary) goes in the entry's
``properties`` under the ``greenml:`` namespace.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from greenml.__version__ import __version__
from greenml.errors import ConfigError
from greenml.exports.footprint import Footprint

SPEC_VERSION = "1.6"
ACTIVITIES = (
    "design", "data-collection", "data-preparation", "training", "fine-tuning",
    "validation", "deployment", "inference", "other",
)  # fmt: skip
"""CycloneDX 1.6's lifecycle activities (``energyConsumption.activity``)."""

BOUNDARY = ("IT energy of the devices greenml measured or estimated (GPU, CPU, DRAM); "
            "CO2eq is location-based and includes the recorded PUE")  # fmt: skip


def cyclonedx_bom(model_name: str, activities: Mapping[str, Footprint],
                  *, model_version: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The BOM (JSON object) of a model with the footprint of each lifecycle activity.

    Raises:
        ConfigError: No activity, an activity CycloneDX does not know, or no model name.
    """
    if not model_name.strip():
        raise ConfigError("--model must name the model")
    if not activities:
        raise ConfigError("give the runs of at least one activity (--training, --inference ...)")
    for activity in activities:
        if activity not in ACTIVITIES:
            raise ConfigError(f"CycloneDX knows no activity {activity!r} ({', '.join(ACTIVITIES)})")
    model: dict[str, Any] = {"type": "machine-learning-model", "bom-ref": "model",
                             "name": model_name}
    if model_version:
        model["version"] = model_version
    model["modelCard"] = {"considerations": {"environmentalConsiderations": {
        "energyConsumptions": [_consumption(a, fp) for a, fp in activities.items()],
        "properties": [{"name": "greenml:boundary", "value": BOUNDARY}],
    }}}  # fmt: skip
    return {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        "serialNumber": f"urn:uuid:{uuid.uuid4()}",
        "version": 1,
        "metadata": {
            "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [
                {"type": "application", "name": "greenml", "version": __version__}]},
            "component": {"type": "machine-learning-model", "bom-ref": "model-root",
                          "name": model_name},
        },
        "components": [model],
    }


def _consumption(activity: str, fp: Footprint) -> dict[str, Any]:
    kwh = fp.energy_kwh
    return {
        "activity": activity,
        "energyProviders": [{
            "description": "the electricity grid at "
            + (", ".join(fp.locations) or "an unrecorded place"),
            "organization": {"name": "grid operator (not recorded)"},
            "energySource": "unknown",
            "energyProvided": {"value": kwh, "unit": "kWh"},
        }],
        "activityEnergyCost": {"value": kwh, "unit": "kWh"},
        "co2CostEquivalent": {"value": fp.co2_g / 1e6, "unit": "tCO2eq"},
        "properties": [
            {"name": "greenml:runs", "value": " ".join(fp.run_ids)},
            {"name": "greenml:energy_method", "value": "/".join(fp.methods) or "unknown"},
            {"name": "greenml:energy_uncertainty_rel", "value": f"{fp.energy_uncertainty_rel:.4g}"},
            {"name": "greenml:co2_uncertainty_rel", "value": f"{fp.co2_uncertainty_rel:.4g}"},
            {"name": "greenml:intensity_source",
             "value": "; ".join(fp.intensity_sources) or "not recorded"},
            {"name": "greenml:source", "value": fp.source},
        ],
    }
