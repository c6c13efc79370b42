"""The optional blocks of a run record: carbon (location- and market-based), cost, water,
embodied carbon, work done (FLOPs), progress, schedule, job, device provenance.

Each block is written by one part of greenml (accounting, the progress
tracker, ``greenml run --when green``, the recorder); see
:mod:`greenml.record.run_record` for the record itself and
:mod:`greenml.record.codec` for how blocks read and write JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from greenml.record.codec import REQUIRED, Block, meta

Method = Literal["counter", "power-integrated", "estimated"]
BlockStatus = Literal["ok", "unknown", "unavailable"]


@dataclass(frozen=True, kw_only=True)
class DeviceProvenance(Block):
    """How one device is measured, stored when the run starts (``measured_devices``)."""

    component: str | None = None
    name: str | None = None
    method: Method | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class CarbonBlock(Block):
    """Emissions of the run (``status`` ``ok``), or why they are not known."""

    status: BlockStatus | None = None
    kg: float | None = field(default=None, metadata=REQUIRED)  # null: not known (see status)
    hint: str | None = None
    reason: str | None = None
    intensity_g_per_kwh: float | None = None
    source: str | None = None
    kind: str | None = None
    scope: str | None = None
    resolution: str | None = None
    pue: float | None = None
    pue_source: str | None = None
    it_energy_kwh: float | None = None
    facility_energy_kwh: float | None = None
    method: str | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    intensity_uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    intensity_series: list[list[float]] | None = None
    location: str | None = None


@dataclass(frozen=True, kw_only=True)
class InstanceCost(Block):
    """The cloud instance's hours at its list price (``cost.instance``)."""

    usd: float | None = None
    hours: float | None = None
    usd_per_h: float | None = None
    pricing: str | None = None
    provider: str | None = None
    instance_type: str | None = None
    region: str | None = None
    source: str | None = None
    date: str | None = None
    table: str | None = None
    method: str | None = None
    on_demand_usd_per_h: float | None = None  # spot runs: the on-demand price beside it
    spot_saving_usd: float | None = None  # spot runs: hours × (on-demand − spot)
    spot_saving_rel: float | None = None  # that saving ÷ the on-demand cost
    spot_source: str | None = None
    spot_date: str | None = None


@dataclass(frozen=True, kw_only=True)
class PolicyBlock(Block):
    """The savings policy in force when the run ran (``greenml savings apply``; ``policy``)."""

    status: str | None = None  # ok, or unreadable (then ``reason``)
    items: list[str] = field(default_factory=list)
    source: str | None = None
    reason: str | None = None
    note: str | None = None
    power_limit_w: float | None = None
    gpu_clocks_mhz: float | None = None
    batch_size: int | None = None
    when: str | None = None
    deadline: str | None = None
    spot: bool | None = None
    checkpoint_interval_s: float | None = None
    cache: bool | None = None


@dataclass(frozen=True, kw_only=True)
class CostBlock(Block):
    """What the run cost (electricity or instance hours), or why it is not known."""

    status: BlockStatus | None = None
    usd: float | None = field(default=None, metadata=REQUIRED)  # null: not known (see status)
    basis: str | None = None
    hint: str | None = None
    reason: str | None = None
    usd_per_kwh_effective: float | None = None
    source: str | None = None
    method: str | None = None
    pue: float | None = None
    pue_source: str | None = None
    it_energy_kwh: float | None = None
    facility_energy_kwh: float | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    instance: InstanceCost | None = None


@dataclass(frozen=True, kw_only=True)
class Interval(Block):
    """A projected total and its prediction interval (no bounds: too few steps)."""

    value: float = field(default=0.0, metadata=REQUIRED)
    low: float | None = field(default=None, metadata=REQUIRED)
    high: float | None = field(default=None, metadata=REQUIRED)


@dataclass(frozen=True, kw_only=True)
class ProjectionBlock(Block):
    """The last projection of the run's totals from its progress reports."""

    step: float = field(default=0.0, metadata=REQUIRED)
    total: float = field(default=0.0, metadata=REQUIRED)
    fraction: float = field(default=0.0, metadata=REQUIRED)
    elapsed_s: float = field(default=0.0, metadata=REQUIRED)
    energy_j: float = field(default=0.0, metadata=REQUIRED)
    duration_s: Interval = field(default_factory=Interval, metadata=REQUIRED)
    total_energy_j: Interval = field(default_factory=Interval, metadata=REQUIRED)
    eta_unix_s: float = field(default=0.0, metadata=REQUIRED)
    increments_used: int = field(default=0, metadata=REQUIRED)
    confidence: float = field(default=0.0, metadata=REQUIRED)
    co2_g: Interval | None = None
    cost_usd: Interval | None = None


@dataclass(frozen=True, kw_only=True)
class ProgressBlock(Block):
    """What the program reported with ``greenml.progress`` (``progress``)."""

    step: float = field(default=0.0, metadata=REQUIRED)
    total: float | None = field(default=None, metadata=REQUIRED)
    reports: int = field(default=0, metadata=REQUIRED)
    rank: int = field(default=0, metadata=REQUIRED)
    projection: ProjectionBlock | None = field(default=None, metadata=REQUIRED)
    windows_from_events: int = field(default=0, metadata=REQUIRED)
    windows_dropped: int = field(default=0, metadata=REQUIRED)
    bad_event_lines: int = field(default=0, metadata=REQUIRED)


@dataclass(frozen=True, kw_only=True)
class ScheduleChunk(Block):
    """One planned piece of a run: from ``start`` to ``end`` (ISO 8601) in ``location``."""

    start: str = field(default="", metadata=REQUIRED)
    end: str = field(default="", metadata=REQUIRED)
    location: str = field(default="", metadata=REQUIRED)
    duration_s: float = field(default=0.0, metadata=REQUIRED)


@dataclass(frozen=True, kw_only=True)
class ScheduleOption(Block):
    """The best placement found in one allowed location."""

    location: str = field(default="", metadata=REQUIRED)
    start: str | None = field(default=None, metadata=REQUIRED)
    mean_intensity_g_per_kwh: float | None = None
    mean_price_usd_per_mwh: float | None = None
    forecast_source: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScheduleExecuted(Block):
    """What ``greenml run --when green`` carried out: the wait and the pauses taken."""

    waited_s: float = field(default=0.0, metadata=REQUIRED)
    started_at_s: float = field(default=0.0, metadata=REQUIRED)
    planned_pauses: list[list[float]] | None = None
    pauses: list[list[float]] | None = None
    paused_s: float | None = None
    abandoned: str | None = None


@dataclass(frozen=True, kw_only=True)
class ScheduleBlock(Block):
    """The green-hours plan a run followed, and what was carried out (``schedule``)."""

    chunks: list[ScheduleChunk] = field(default_factory=list)
    start: str | None = None
    expected_g: float | None = None
    mean_intensity_g_per_kwh: float | None = None
    baseline_mean_intensity_g_per_kwh: float | None = None
    saving_pct: float | None = None
    saving_pct_interval: list[float] | None = None
    forecast_source: str | None = None
    location: str | None = None
    baseline_location: str | None = None
    baseline_forecast_source: str | None = None
    baseline_start: str | None = None
    baseline_g: float | None = None
    energy_kwh: float | None = None
    mean_price_usd_per_mwh: float | None = None
    baseline_mean_price_usd_per_mwh: float | None = None
    expected_usd: float | None = None
    baseline_usd: float | None = None
    cost_change_pct: float | None = None
    price_source: str | None = None
    objective: str | None = None
    uncertainty: str | None = None
    interval_level: float | None = None
    options: list[ScheduleOption] | None = None
    notes: list[str] | None = None
    duration_s: float | None = None
    duration_source: str | None = None
    interruptible: bool | None = None
    deadline: str | None = None
    wait_notes: list[str] | None = None
    executed: ScheduleExecuted | None = None


JobSource = Literal["option", "env", "slurm", "torchelastic", "ray", "kubernetes"]
JobScope = Literal["allocation", "step"]


@dataclass(frozen=True, kw_only=True)
class JobBlock(Block):
    """The distributed job the run belongs to, and which node of it (``job``).

    Written by ``greenml run`` (see :mod:`greenml.run.job_identity`); ``source``
    says where the job id came from, ``node_source`` the node name,
    ``node_rank_source`` and ``expected_nodes_source`` the variable (or
    ``option``) that gave them; ``pod`` and ``namespace``: the Kubernetes pod
    it ran in. ``scheduler``: the batch system the run ran under (``slurm``),
    even when ``--job`` named the job; ``array_job_id``/``array_task_id``: a Slurm
    array task (``job_id`` is then the task's own id); ``scope``: ``allocation`` for
    a run that measures the node for the whole job (the Slurm prolog), ``step``
    for one step. Null (or absent): no source gave the value.
    """

    job_id: str = field(default="", metadata=meta(required=True, minLength=1))
    source: JobSource = field(default="option", metadata=REQUIRED)
    step_id: str | None = None
    job_name: str | None = None
    node: str | None = None
    node_source: str | None = None
    node_rank: int | None = field(default=None, metadata=meta(minimum=0))
    node_rank_source: str | None = None
    local_rank: int | None = field(default=None, metadata=meta(minimum=0))
    global_rank: int | None = field(default=None, metadata=meta(minimum=0))
    world_size: int | None = field(default=None, metadata=meta(minimum=0))
    expected_nodes: int | None = field(default=None, metadata=meta(minimum=1))
    expected_nodes_source: str | None = None
    pod: str | None = None
    namespace: str | None = None
    scheduler: str | None = None
    array_job_id: str | None = None
    array_task_id: str | None = None
    scope: JobScope | None = None


@dataclass(frozen=True, kw_only=True)
class MarketPart(Block):
    """One share of the energy priced by one market instrument (``carbon_market.parts``)."""

    basis: str = field(default="", metadata=REQUIRED)
    kwh: float = field(default=0.0, metadata=REQUIRED)
    g_per_kwh: float = field(default=0.0, metadata=REQUIRED)
    kg: float = field(default=0.0, metadata=REQUIRED)
    source: str = field(default="", metadata=REQUIRED)
    uncertainty_rel: float = field(default=0.0, metadata=meta(minimum=0))


@dataclass(frozen=True, kw_only=True)
class CertificateClaim(Block):
    """Certificates or a PPA the user declared (``carbon_market.certificates``)."""

    kind: str | None = None
    vintage: int | None = None
    share: float | None = field(default=None, metadata=meta(minimum=0, maximum=1))
    kwh: float | None = field(default=None, metadata=meta(minimum=0))
    covered_kwh: float | None = field(default=None, metadata=meta(minimum=0))


@dataclass(frozen=True, kw_only=True)
class OffsetClaim(Block):
    """An offset the user holds: listed, never subtracted (``carbon_market.offsets``)."""

    kg: float | None = field(default=None, metadata=meta(minimum=0))
    kind: str | None = None
    vintage: int | None = None


@dataclass(frozen=True, kw_only=True)
class CarbonMarketBlock(Block):
    """Market-based emissions (GHG Protocol Scope 2), beside and never mixed with ``carbon``."""

    status: str | None = None
    kg: float | None = field(default=None, metadata=REQUIRED)  # null: not known (see status)
    scope: str | None = None
    basis: str | None = None
    intensity_g_per_kwh: float | None = None
    energy_kwh: float | None = None
    method: str | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    parts: list[MarketPart] | None = None
    certificates: list[CertificateClaim] | None = None
    offsets: list[OffsetClaim] | None = None
    offsets_kg: float | None = None
    offsets_note: str | None = None
    notes: list[str] | None = None
    hint: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class WaterBlock(Block):
    """Water consumed: on-site (WUE × IT energy) and off-site (generation), in litres."""

    status: str | None = None
    litres: float | None = field(default=None, metadata=REQUIRED)
    onsite_l: float | None = None
    offsite_l: float | None = None
    wue_l_per_kwh: float | None = None
    wue_source: str | None = None
    onsite_uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    ewif_l_per_kwh: float | None = None
    offsite_source: str | None = None
    offsite_uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    offsite_reason: str | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    method: str | None = None
    note: str | None = None
    note_energy: str | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class EmbodiedTerm(Block):
    """One device's share of its embodied emissions (``embodied.terms``)."""

    item: str = field(default="", metadata=REQUIRED)
    basis: str = field(default="", metadata=REQUIRED)
    te_kg: float = field(default=0.0, metadata=REQUIRED)
    hours: float = field(default=0.0, metadata=REQUIRED)
    lifetime_h: float = field(default=0.0, metadata=REQUIRED)
    share: float = field(default=0.0, metadata=REQUIRED)
    kg: float = field(default=0.0, metadata=REQUIRED)
    source: str = field(default="", metadata=REQUIRED)


@dataclass(frozen=True, kw_only=True)
class EmbodiedBlock(Block):
    """Embodied (manufacturing) emissions amortized over the run's device-hours."""

    status: str | None = None
    kg: float | None = field(default=None, metadata=REQUIRED)
    method: str | None = None
    formula: str | None = None
    basis: str | None = None
    lifetime_years: float | None = None
    lifetime_source: str | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    terms: list[EmbodiedTerm] | None = None
    missing: list[str] | None = None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class FlopsWindow(Block):
    """FLOPs of one window name (``flops.windows``): per step, steps taken, steps counted."""

    flops_per_step: float | None = None
    steps: int | None = None
    sampled_steps: int | None = None


@dataclass(frozen=True, kw_only=True)
class FlopsBlock(Block):
    """Work done: FLOPs counted on sampled steps (or given), FLOP/s, MFU, per joule, per sample."""

    status: str | None = None
    flops: float | None = field(default=None, metadata=REQUIRED)  # null: see reason
    method: str | None = None
    source: str | None = None
    steps: int | None = None
    sampled_steps: int | None = None
    uncertainty_rel: float | None = field(default=None, metadata=meta(minimum=0))
    counter_overhead_s: float | None = None
    flops_per_s: float | None = None
    flops_per_j: float | None = None
    samples: float | None = None
    j_per_sample: float | None = None
    precision: str | None = None
    precision_source: str | None = None
    peak_flops_per_s: float | None = None
    peak_source: str | None = None
    mfu: float | None = None
    mfu_reason: str | None = None
    reason: str | None = None
    windows: dict[str, FlopsWindow] | None = None


@dataclass(frozen=True, kw_only=True)
class WorkflowPart(Block):
    """The measured or the estimated model calls of a workflow (``workflow.measured``)."""

    calls: int = field(default=0, metadata=REQUIRED)
    energy_j: float = field(default=0.0, metadata=REQUIRED)
    uncertainty_j: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    co2eq_g: float = 0.0
    co2eq_uncertainty_g: float = field(default=0.0, metadata=meta(minimum=0))
    co2eq_unknown_calls: int = 0
    water_ml: float = 0.0
    water_unknown_calls: int = 0


@dataclass(frozen=True, kw_only=True)
class WorkflowBlock(Block):
    """An agent workflow's model and tool calls (greenml.llm.remote), measured apart from
    estimated; ``call_list`` holds each call's figures and their sources."""

    name: str | None = None
    executions: int = field(default=1, metadata=meta(required=True, minimum=0))
    calls: int = field(default=0, metadata=REQUIRED)
    tool_calls: int | None = None
    tool_seconds: float | None = None
    measured: WorkflowPart = field(default_factory=WorkflowPart, metadata=REQUIRED)
    estimated: WorkflowPart = field(default_factory=WorkflowPart, metadata=REQUIRED)
    by_model: dict[str, Any] | None = None
    call_list: list[dict[str, Any]] | None = None
    calls_not_listed: int | None = None
    uncertainty_note: str | None = None


EXTRA_BLOCKS: dict[str, Any] = {
    "measured_devices": dict[str, DeviceProvenance],
    "carbon": CarbonBlock,
    "cost": CostBlock,
    "progress": ProgressBlock,
    "schedule": ScheduleBlock,
    "job": JobBlock,
    "carbon_market": CarbonMarketBlock,
    "water": WaterBlock,
    "embodied": EmbodiedBlock,
    "flops": FlopsBlock,
    "workflow": WorkflowBlock,
}
"""The record keys outside the core that greenml itself writes, and their types."""


@dataclass(frozen=True, kw_only=True)
class CapChange(Block):
    """One change of the GPU power limit by ``--cap-when-dirty``."""

    at: str = field(default="", metadata=meta(required=True, format="date-time"))
    power_limit_w: float = field(default=0.0, metadata=REQUIRED)
    intensity_g_per_kwh: float = field(default=0.0, metadata=REQUIRED)
    reason: str = field(default="", metadata=REQUIRED)  # dirty, clean, deadline: no slack left


@dataclass(frozen=True, kw_only=True)
class DirtyCapBlock(Block):
    """Carbon-aware power capping during the run, and the CO2 saved against running uncapped."""

    dirty_above_g_per_kwh: float = field(default=0.0, metadata=REQUIRED)
    capped_limit_w: float = field(default=0.0, metadata=REQUIRED)
    uncapped_limit_w: float = field(default=0.0, metadata=REQUIRED)
    intensity_source: str = field(default="", metadata=REQUIRED)
    curve_source: str = field(default="", metadata=REQUIRED)
    slack_s: float | None = None  # the time the deadline allowed to lose; None: no deadline
    changes: list[CapChange] = field(default_factory=list, metadata=REQUIRED)
    capped_s: float = field(default=0.0, metadata=REQUIRED)
    co2_g: float = field(default=0.0, metadata=REQUIRED)
    co2_uncapped_g: float = field(default=0.0, metadata=REQUIRED)
    co2_saved_g: float = field(default=0.0, metadata=REQUIRED)
    co2_saved_uncertainty_g: float = field(default=0.0, metadata=meta(required=True, minimum=0))
    time_cost_s: float = field(default=0.0, metadata=REQUIRED)
    method: str = field(default="", metadata=REQUIRED)
    note: str | None = None


@dataclass(frozen=True, kw_only=True)
class ImportedBlock(Block):
    """Where an imported run's figures come from (``greenml import``): another tool's own
    output, with that tool's method as it labels it (greenml never upgrades it to measured)."""

    tool: str = field(default="", metadata=REQUIRED)  # "codecarbon", "carbontracker"
    tool_version: str | None = None
    method: str = field(default="", metadata=REQUIRED)  # the tool's own label of how
    source_file: str | None = None
    source_run_id: str | None = None
    imported_at: str | None = field(default=None, metadata=meta(format="date-time"))
