"""The run record as types: :class:`RunRecord` and its energy, environment and window blocks.

``Store.get_run_record`` returns a :class:`RunRecord`; ``Store.get_record``
returns its :meth:`~greenml.record.codec.Block.to_dict`, the JSON object that
``greenml runs export`` prints, reports read and the ledger hashes.

Versions (``schema_version``):

1. records written before the version was kept (no ``schema_version`` key);
2. the same blocks, with ``schema_version`` stored in the record;
3. adds the optional ``carbon_market``, ``water``, ``embodied`` and ``flops`` blocks
   (a version-2 record reads as before: absent blocks stay absent);
4. adds the optional ``workflow`` block (model and tool calls of an agent workflow,
   :mod:`greenml.llm.remote`); older records read as before. The optional ``policy``
   block (the savings policy in force, :mod:`greenml.savings.policy`) and ``dirty_cap``
   block (``greenml run --cap-when-dirty``) came later within version 4, without a
   bump: a record without them reads as before;
5. adds the optional ``node`` block (a node meter or calibration beside the components,
   and the residual, :mod:`greenml.record.node`) and the optional ``imported`` block (a run
   read from another tool's output by ``greenml import``, with that tool's method); older
   records read as before.

A record reads back to exactly the dict it was stored as, so records ledgered
by any version keep their hash. The JSON Schema of the record is generated
from these types (:mod:`greenml.record.schema`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from greenml.record.blocks import (
    CarbonBlock,
    CarbonMarketBlock,
    CostBlock,
    DeviceProvenance,
    DirtyCapBlock,
    EmbodiedBlock,
    FlopsBlock,
    ImportedBlock,
    JobBlock,
    Method,
    PolicyBlock,
    ProgressBlock,
    ScheduleBlock,
    WaterBlock,
    WorkflowBlock,
)
from greenml.record.codec import REQUIRED, Block, meta
from greenml.record.node import NodeBlock

RECORD_SCHEMA_VERSION = 5
"""The version of the records this greenml writes."""

RunStatus = Literal["running", "completed", "failed", "interrupted", "incomplete"]


@dataclass(frozen=True, kw_only=True)
class DeviceBlock(Block):
    """Energy of one device, and how it was obtained."""

    energy_j: float = field(default=0.0, metadata=REQUIRED)
    method: Method = field(default="estimated", metadata=REQUIRED)
    uncertainty_rel: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    name: str = field(default="", metadata=REQUIRED)
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ComponentBlock(Block):
    """Energy of one component kind (``gpu``, ``cpu``, ``dram``), summed over its devices."""

    energy_j: float = field(default=0.0, metadata=REQUIRED)
    method: Method = field(default="estimated", metadata=REQUIRED)
    uncertainty_rel: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    devices: dict[str, DeviceBlock] = field(default_factory=dict, metadata=REQUIRED)


@dataclass(frozen=True, kw_only=True)
class EnergyBlock(Block):
    """The run's energy (``Measurement.to_dict()``), with notes, or a partial integration.

    A run that did not finish has ``method`` and ``note`` (why the figure is
    partial) instead of ``notes``.
    """

    total_j: float = field(default=0.0, metadata=REQUIRED)
    total_kwh: float = field(default=0.0, metadata=REQUIRED)
    uncertainty_rel: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    components: dict[str, ComponentBlock] = field(default_factory=dict, metadata=REQUIRED)
    notes: list[str] | None = None
    method: Method | None = None
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class WindowSummary(Block):
    """One measured window of the run (the run itself first, then the program's)."""

    name: str = field(default="", metadata=REQUIRED)
    started_at: str = field(default="", metadata=meta(required=True, format="date-time"))
    duration_s: float = field(default=0.0, metadata=REQUIRED)
    energy_j: float = field(default=0.0, metadata=REQUIRED)


@dataclass(frozen=True, kw_only=True)
class PythonInfo(Block):
    version: str | None = None
    implementation: str | None = None
    executable: str | None = None


@dataclass(frozen=True, kw_only=True)
class Packages(Block):
    """The installed distributions and the SHA-256 of their sorted ``name==version`` list."""

    count: int | None = None
    sha256: str | None = None
    distributions: dict[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class GitState(Block):
    commit: str | None = None
    dirty: bool | None = None
    branch: str | None = None


@dataclass(frozen=True, kw_only=True)
class OsInfo(Block):
    system: str | None = None
    release: str | None = None
    platform: str | None = None


@dataclass(frozen=True, kw_only=True)
class CpuInfo(Block):
    model: str | None = None
    logical_cores: int | None = None


@dataclass(frozen=True, kw_only=True)
class GpuInfo(Block):
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    memory_total_bytes: int | None = None
    power_limit_w: float | None = None


@dataclass(frozen=True, kw_only=True)
class GpuEnvironment(Block):
    """NVML's view: driver, CUDA and NVML versions and every GPU present (``{}``: no NVML)."""

    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None
    gpus: list[GpuInfo] | None = None


@dataclass(frozen=True, kw_only=True)
class Environment(Block):
    """What the run ran on (``{}`` until it is captured, a moment after the start)."""

    greenml_version: str | None = None
    python: PythonInfo | None = None
    packages: Packages | None = None
    git: GitState | None = None
    os: OsInfo | None = None
    cpu: CpuInfo | None = None
    gpu: GpuEnvironment | None = None
    hostname: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunRecord(Block):
    """One run as stored: the core keys, then the blocks greenml adds; other keys are kept.

    Build one with :meth:`from_dict`; :meth:`to_dict` gives the JSON object back.
    """

    id: str = field(default="", metadata=meta(required=True, minLength=1))
    name: str | None = field(default=None, metadata=REQUIRED)
    command: list[str] = field(default_factory=list, metadata=REQUIRED)
    tags: dict[str, str] = field(default_factory=dict, metadata=REQUIRED)
    started_at: str = field(default="", metadata=meta(required=True, format="date-time"))
    ended_at: str | None = field(default=None, metadata=meta(required=True, format="date-time"))
    duration_s: float | None = field(default=None, metadata=REQUIRED)
    exit_code: int | None = field(default=None, metadata=REQUIRED)
    status: RunStatus = field(default="running", metadata=REQUIRED)
    energy: EnergyBlock = field(default_factory=EnergyBlock, metadata=REQUIRED)
    environment: Environment = field(default_factory=Environment, metadata=REQUIRED)
    windows: list[WindowSummary] = field(default_factory=list, metadata=REQUIRED)
    schema_version: int = field(default=1, metadata=meta(minimum=1))
    measured_devices: dict[str, DeviceProvenance] | None = None
    carbon: CarbonBlock | None = None
    cost: CostBlock | None = None
    progress: ProgressBlock | None = None
    schedule: ScheduleBlock | None = None
    job: JobBlock | None = None
    samples_sha256: str | None = field(default=None, metadata=meta(pattern="^[0-9a-f]{64}$"))
    carbon_market: CarbonMarketBlock | None = None
    water: WaterBlock | None = None
    embodied: EmbodiedBlock | None = None
    flops: FlopsBlock | None = None
    workflow: WorkflowBlock | None = None
    policy: PolicyBlock | None = None
    dirty_cap: DirtyCapBlock | None = None
    node: NodeBlock | None = None
    imported: ImportedBlock | None = None
    index_sha256: str | None = field(default=None, metadata=meta(pattern="^[0-9a-f]{64}$"))

    def _repr_html_(self) -> str:
        """The key figures and the energy per device, for notebooks."""
        from greenml.record.html import record_table_html

        return record_table_html(self.to_dict())
