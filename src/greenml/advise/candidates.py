"""Where a workload could run: every GPU of the hardware table, and the priced cloud instances.

A GPU candidate is one board in a facility of the user's (on-premises): its
cost is the electricity only, at ``--price``. An instance candidate is a
cloud instance of the price table whose GPUs are known (``INSTANCE_GPUS``):
it is billed by the hour, uses all its GPUs, and its provider's PUE applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from greenml.accounting.instances import InstancePrice, instance_price
from greenml.errors import ConfigError
from greenml.hardware.gpu import GpuSpec, gpu_spec, gpu_specs

INSTANCE_GPUS: dict[str, tuple[str, int]] = {
    "aws:p3.2xlarge": ("V100 SXM2 16GB", 1),
    "aws:p4d.24xlarge": ("A100 SXM4 40GB", 8),
    "aws:p5.48xlarge": ("H100 SXM", 8),
    "aws:g4dn.xlarge": ("T4", 1),
    "aws:g5.xlarge": ("A10G", 1),
    "aws:g5.12xlarge": ("A10G", 4),
    "aws:g6.xlarge": ("L4", 1),
    "aws:g6e.xlarge": ("L40S", 1),
    "gcp:a2-highgpu-1g": ("A100 SXM4 40GB", 1),
    "gcp:a2-highgpu-8g": ("A100 SXM4 40GB", 8),
    "gcp:a3-highgpu-8g": ("H100 SXM", 8),
    "gcp:g2-standard-4": ("L4", 1),
    "azure:Standard_NC4as_T4_v3": ("T4", 1),
    "azure:Standard_NC24ads_A100_v4": ("A100 PCIe 80GB", 1),
    "azure:Standard_ND96asr_v4": ("A100 SXM4 40GB", 8),
    "azure:Standard_ND96isr_H100_v5": ("H100 SXM", 8),
}
"""Instance (``provider:type``) → (GPU table row, GPUs in it), from the providers' pages
(the same pages ``instance_prices.csv`` cites)."""


@dataclass(frozen=True)
class Candidate:
    """One place to run: a GPU (on-premises) or a cloud instance.

    Attributes:
        name: The GPU's or the instance's name.
        kind: ``gpu`` or ``instance``.
        spec: The GPU table row.
        count: GPUs used.
        price: The instance's hourly price (``None`` for a GPU).
    """

    name: str
    kind: str
    spec: GpuSpec
    count: int
    price: InstancePrice | None = None

    @property
    def provider(self) -> str | None:
        return self.price.provider if self.price is not None else None

    @property
    def region(self) -> str | None:
        return self.price.region if self.price is not None else None


def gpu_candidates() -> list[Candidate]:
    """One candidate per GPU table row that has a TDP (energy needs power)."""
    return [Candidate(s.name, "gpu", s, 1) for s in gpu_specs() if s.tdp_w is not None]


def instance_candidates(table: str | None = None) -> list[Candidate]:
    """One candidate per priced instance of :data:`INSTANCE_GPUS` (``table`` first)."""
    out = []
    for key, (gpu, count) in INSTANCE_GPUS.items():
        try:
            price = instance_price(key, table=table)
        except ConfigError:
            continue
        out.append(Candidate(f"{price.provider}:{price.instance_type}", "instance",
                             gpu_spec(gpu), count, price))  # fmt: skip
    return out


def candidates(which: str = "all", table: str | None = None) -> list[Candidate]:
    """``gpus``, ``instances`` or ``all`` of them.

    Raises:
        ConfigError: Unknown ``which``.
    """
    if which not in ("all", "gpus", "instances"):
        raise ConfigError(f"candidates must be all, gpus or instances, not {which!r}")
    out: list[Candidate] = []
    if which in ("all", "gpus"):
        out += gpu_candidates()
    if which in ("all", "instances"):
        out += instance_candidates(table)
    return out
