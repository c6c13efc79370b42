"""BoAmps (Boavizta's AI energy report format, which CodeCarbon 3.x writes): one report
for a set of runs of one task, one ``measures`` entry per run.

The schema (``model/report_schema.json`` of github.com/Boavizta/BoAmps, format 1.1.0)
requires what greenml cannot know from a measurement (the task's stage and family,
the data type): those come from the command line. Units are BoAmps' own: kWh for
``powerConsumption``, seconds for ``measurementDuration``, gCO2eq/kWh for the grid.
``quality`` follows BoAmps' bands from greenml's own uncertainty (high ±10 %,
medium ±25 %, else low).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from greenml.__version__ import __version__
from greenml.errors import ConfigError
from greenml.exports.footprint import Footprint
from greenml.quantities import J_PER_KWH
from greenml.record.run_record import RunRecord

FORMAT_VERSION = "1.1.0"
SPEC_URI = "https://github.com/Boavizta/BoAmps/tree/main/model"
DATA_TYPES = ("tabular", "audio", "boolean", "image", "video", "object", "text", "token",
              "word", "other")  # fmt: skip
INFRA_TYPES = ("publicCloud", "privateCloud", "onPremise", "other")


def boamps_report(records: Sequence[RunRecord], fp: Footprint, *, task_stage: str,
                  task_family: str, data_type: str, infra_type: str = "other",
                  algorithm: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The BoAmps report (JSON object) of ``records`` (summed in ``fp``).

    Raises:
        ConfigError: An empty task stage or family, a data or infrastructure type
            BoAmps does not know, or runs with no hardware recorded.
    """
    if not task_stage.strip() or not task_family.strip():
        raise ConfigError("BoAmps needs --task-stage and --task-family")
    if data_type not in DATA_TYPES:
        raise ConfigError(f"--data-type must be one of {', '.join(DATA_TYPES)}")
    if infra_type not in INFRA_TYPES:
        raise ConfigError(f"--infra-type must be one of {', '.join(INFRA_TYPES)}")
    components = _components(records)
    if not components:
        raise ConfigError("the runs record no hardware (BoAmps needs at least one component)")
    first = records[0]
    env = first.environment
    report: dict[str, Any] = {
        "header": {
            "formatVersion": FORMAT_VERSION,
            "formatVersionSpecificationUri": SPEC_URI,
            "reportId": "greenml-" + "-".join(fp.run_ids),
            "reportDatetime": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "reportStatus": "final",
        },
        "task": {
            "taskStage": task_stage,
            "taskFamily": task_family,
            "algorithms": [{"algorithmName": algorithm} if algorithm else {}],
            "dataset": [{"dataUsage": "input", "dataType": data_type}],
        },
        "measures": [_measure(r) for r in records],
        "system": {"os": (env.os.system if env.os and env.os.system else "unknown")},
        "software": {"language": "python"},
        "infrastructure": {"infraType": infra_type, "components": components},
        "environment": {"country": ", ".join(fp.locations) or "unknown"},
        "quality": quality(fp.energy_uncertainty_rel),
    }
    if env.python and env.python.version:
        report["software"]["version"] = env.python.version
    if fp.intensity_g_per_kwh is not None:
        report["environment"]["powerSourceCarbonIntensity"] = round(fp.intensity_g_per_kwh, 3)
    return report


def quality(uncertainty_rel: float) -> str:
    """BoAmps' quality band of a figure with this relative uncertainty."""
    return "high" if uncertainty_rel <= 0.10 else "medium" if uncertainty_rel <= 0.25 else "low"


def _measure(r: RunRecord) -> dict[str, Any]:
    how = {name: c.method for name, c in r.energy.components.items()}
    tool = (f"{r.imported.tool} {r.imported.tool_version or ''}".strip()
            if r.imported else "greenml")  # fmt: skip
    m: dict[str, Any] = {
        "measurementMethod": tool,
        "version": (r.imported.tool_version if r.imported else __version__) or "unknown",
        "powerConsumption": r.energy.total_j / J_PER_KWH,
        "measurementDuration": r.duration_s or 0.0,
        "measurementDateTime": r.started_at.replace("T", " ")[:19],
    }
    if "cpu" in how:
        m["cpuTrackingMode"] = how["cpu"]
    if "gpu" in how:
        m["gpuTrackingMode"] = how["gpu"]
    return m


def _components(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    found: dict[tuple[str, str], int] = {}
    for r in records:
        env = r.environment
        gpus: dict[str, int] = {}
        for gpu in (env.gpu.gpus if env.gpu and env.gpu.gpus else None) or []:
            gpus[gpu.name or "unknown GPU"] = gpus.get(gpu.name or "unknown GPU", 0) + 1
        for name, n in gpus.items():
            found[("gpu", name)] = max(found.get(("gpu", name), 0), n)
        if env.cpu is not None and env.cpu.model:
            found[("cpu", env.cpu.model)] = 1
    return [{"componentType": kind, "componentName": name, "nbComponent": n}
            for (kind, name), n in found.items()]  # fmt: skip
