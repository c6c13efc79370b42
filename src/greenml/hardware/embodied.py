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
import math
from dataclasses import dataclass
from typing import Any

from greenml.data import packaged
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
    text = packaged("embodied.csv").read_text(encoding="utf-8")
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


CLASS_NOTE = (
    "class estimate: no published figure for this GPU model, so the cited figure of a "
    "data-centre GPU of the same class (the A100's) is used; ±100 %"
)
UNCERTAINTY_REL = {"given": 0.0, "model": 0.5, "class": 1.0}
"""Relative uncertainty of a term by its basis: LCA estimates of one model spread about
±50 % between studies; a class figure applied to another model, about ±100 %."""


@dataclass(frozen=True)
class Embodied:
    """One amortized term: ``TE × (TiR / EL) × (RR / ToR)``, kg and hours (SCI's M).

    ``basis``: ``model`` (a cited figure for this GPU), ``class`` (a cited figure of
    another GPU of its class, labelled) or ``given`` (``--embodied-kg``).
    """

    item: str
    te_kg: float
    source: str
    tir_h: float
    el_h: float
    rr: float
    tor: float
    basis: str = "model"

    @property
    def m_kg(self) -> float:
        return self.te_kg * (self.tir_h / self.el_h) * (self.rr / self.tor)


def amortize(
    devices: list[tuple[str, float]],
    *,
    embodied_kg: float | None = None,
    lifetime_years: float = DEFAULT_LIFETIME_YEARS,
    machine_hours: float = 0.0,
    by_class: bool = False,
    in_use: float = 1.0,
) -> tuple[list[Embodied], list[str]]:
    """The embodied terms of GPUs used for some hours, and what could not be included.

    Args:
        devices: (GPU name, hours used) per device.
        embodied_kg: A figure per GPU (per machine without GPU) given by the user.
        lifetime_years: Expected lifespan EL.
        machine_hours: Hours of a machine without GPU (``embodied_kg`` applies to it).
        by_class: For a GPU without a cited figure, use the class figure (labelled).
        in_use: Share of the lifespan the hardware is in use (BLOOM: 0.85); the
            lifetime hours EL are the lifespan's hours × this share.
    """
    el_h = lifetime_years * HOURS_PER_YEAR * in_use
    given = "given by the user (--embodied-kg)"
    if embodied_kg is not None:
        if devices:
            hours = sum(h for _, h in devices)
            names = ", ".join(dict.fromkeys(n for n, _ in devices))
            return [Embodied(f"each GPU ({names})", embodied_kg, given, hours, el_h, 1, 1,
                             "given")], []  # fmt: skip
        return [Embodied("the machine", embodied_kg, given, machine_hours, el_h, 1, 1,
                         "given")], []  # fmt: skip
    if not devices:
        return [], ["no cited embodied figure for CPU-only machines: pass --embodied-kg"]
    terms: list[Embodied] = []
    missing: list[str] = []
    for name, hours in devices:
        gpu, host = embodied_for_gpu(name)
        if gpu is None:
            reference = _class_reference() if by_class else None
            if reference is None:
                missing.append(f"no cited embodied figure for {name}: pass --embodied-kg")
                continue
            source = f"{CLASS_NOTE}: {reference.source}"
            terms.append(Embodied(f"{name} (class: data-centre GPU)", reference.kg, source,
                                  hours, el_h, 1, 1, "class"))  # fmt: skip
            missing.append(f"host server of {name}: no cited figure, not included")
            continue
        terms.append(Embodied(gpu.item, gpu.kg, gpu.source, hours, el_h, 1, 1))
        if host is None or not host.gpus_per_host:
            missing.append(f"host server of {name}: no cited figure, not included")
        else:
            terms.append(
                Embodied(host.item, host.kg, host.source, hours, el_h, 1, host.gpus_per_host)
            )
    return terms, missing


def embodied_block(
    devices: list[tuple[str, float]],
    *,
    embodied_kg: float | None = None,
    lifetime_years: float = DEFAULT_LIFETIME_YEARS,
    machine_hours: float = 0.0,
    lifetime_source: str = LIFETIME_SOURCE,
    in_use: float | None = None,
) -> dict[str, Any]:
    """The ``embodied`` block of a run record or an estimate (class figures allowed, labelled).

    ``in_use``: share of the lifespan in use (None: 1.0, the whole lifespan).
    """
    share = 1.0 if in_use is None else in_use
    terms, missing = amortize(devices, embodied_kg=embodied_kg, lifetime_years=lifetime_years,
                              machine_hours=machine_hours, by_class=True, in_use=share)  # fmt: skip
    block: dict[str, Any] = {
        "kg": None, "status": "unknown", "method": "amortized",
        "formula": "device-hours × embodied kg ÷ lifetime hours (SCI's M)",
        "lifetime_years": lifetime_years, "lifetime_source": lifetime_source,
    }  # fmt: skip
    if in_use is not None:
        block["lifetime_in_use"] = share
        block["formula"] = ("device-hours × embodied kg ÷ (lifetime hours × share in use) "
                            "(SCI's M; BLOOM: 6 years × 85 %)")  # fmt: skip
    if terms:
        kg = sum(t.m_kg for t in terms)
        spread = math.hypot(*(t.m_kg * UNCERTAINTY_REL[t.basis] for t in terms))
        block.update(
            kg=kg, status="ok", uncertainty_rel=spread / kg if kg > 0 else 0.0,
            basis="+".join(dict.fromkeys(t.basis for t in terms)),
            terms=[{"item": t.item, "basis": t.basis, "te_kg": t.te_kg, "hours": t.tir_h,
                    "lifetime_h": t.el_h, "share": t.rr / t.tor, "kg": t.m_kg,
                    "source": t.source} for t in terms],
        )  # fmt: skip
    if missing:
        block["missing"] = missing
    return block


def _class_reference() -> EmbodiedItem | None:
    """The cited figure a GPU of the data-centre class falls back to (the first GPU row)."""
    return next((i for i in _load() if i.kind == "gpu"), None)
