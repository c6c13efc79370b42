"""Embodied (manufacturing) emissions of accelerators and their host servers, cited.

The table (``data/embodied.csv``) holds only figures with a published source
(see ``data/SOURCES.md``). A GPU that is not in it has no embodied figure:
reports say so and ask for one (``--embodied-kg``); nothing is guessed.

Rows are of two kinds:

- ``gpu``: the embodied emissions of one accelerator;
- ``host``: the server that hosts ``gpus_per_host`` accelerators, the
  accelerators themselves excluded; each GPU is charged its share of it.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from importlib import resources

from greenml.errors import ConfigError
from greenml.hardware.gpu import gpu_spec

DEFAULT_LIFETIME_YEARS = 4.0
"""Expected lifespan of server hardware when the user gives none."""

LIFETIME_SOURCE = (
    "as in Cloud Carbon Footprint's embodied-emissions methodology (after Teads' EC2 "
    "dataset, from the Dell PowerEdge R740 full life-cycle assessment) and the worked "
    "example of the SCI specification; Luccioni et al. (BLOOM) assumed 6 years at 85 % "
    "use (5.1 years), which would lower M by about a fifth"
)

HOURS_PER_YEAR = 365 * 24
"""The SCI specification's worked example amortizes over 365-day years."""


@dataclass(frozen=True)
class EmbodiedItem:
    """One row of the embodied-emissions table.

    Attributes:
        item: What the figure is for.
        kind: ``gpu`` (one accelerator) or ``host`` (its server, GPUs excluded).
        gpus: Canonical GPU table names (``gpus.csv``) the row applies to.
        kg: Embodied emissions in kg CO2eq.
        gpus_per_host: For a host, how many GPUs share it.
        source: The publication.
        notes: How the figure applies.
    """

    item: str
    kind: str
    gpus: tuple[str, ...]
    kg: float
    gpus_per_host: int | None
    source: str
    notes: str = ""


def embodied_items() -> list[EmbodiedItem]:
    """Every row of the packaged table, in table order."""
    return list(_load())


@functools.cache
def _load() -> tuple[EmbodiedItem, ...]:
    text = (resources.files("greenml") / "data" / "embodied.csv").read_text(encoding="utf-8")
    items = []
    for row in csv.DictReader(text.splitlines()):
        kind = row["kind"].strip()
        if kind not in ("gpu", "host"):
            raise ConfigError(f"embodied.csv: unknown kind {kind!r} for {row['item']!r}")
        per_host = row["gpus_per_host"].strip()
        items.append(
            EmbodiedItem(
                item=row["item"],
                kind=kind,
                gpus=tuple(g.strip() for g in row["gpus"].split(";") if g.strip()),
                kg=float(row["embodied_kgco2e"]),
                gpus_per_host=int(per_host) if per_host else None,
                source=row["source"],
                notes=row.get("notes", "") or "",
            )
        )
    return tuple(items)


def embodied_for_gpu(name: str) -> tuple[EmbodiedItem | None, EmbodiedItem | None]:
    """The (GPU, host) rows for a device name such as NVML's ``NVIDIA A100-SXM4-80GB``.

    Either may be ``None``: no cited figure. An unknown GPU name gives ``(None, None)``.
    """
    try:
        canonical = gpu_spec(name).name
    except ConfigError:
        return None, None
    gpu = next((i for i in _load() if i.kind == "gpu" and canonical in i.gpus), None)
    host = next((i for i in _load() if i.kind == "host" and canonical in i.gpus), None)
    return gpu, host
