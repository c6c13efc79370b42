"""Tables of the run store (SQLAlchemy Core), the same on SQLite and PostgreSQL.

JSON values are stored as text (``json.dumps``) so both backends hold them alike.
Times are Unix seconds (UTC) as double-precision floats.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from greenml.store.schema_version import SCHEMA_VERSION as SCHEMA_VERSION

RUN_STATUSES = ("running", "completed", "failed", "interrupted", "incomplete")
FINAL_STATUSES = ("completed", "failed", "interrupted", "incomplete")

metadata = MetaData()


def _row_id() -> Column[int]:
    """A 64-bit autoincrement key (plain INTEGER on SQLite, where only that autoincrements)."""
    return Column(
        "id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    )

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(32), primary_key=True),
    Column("name", String(255), nullable=True, index=True),
    Column("command", Text, nullable=False),
    Column("tags", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", Double, nullable=False, index=True),
    Column("ended_at", Double, nullable=True),
    Column("heartbeat_at", Double, nullable=False),
    Column("duration_s", Double, nullable=True),
    Column("exit_code", Integer, nullable=True),
    Column("pid", Integer, nullable=False),
    Column("hostname", String(255), nullable=True),
    Column("energy", Text, nullable=True),
    Column("environment", Text, nullable=True),
    Column("extra", Text, nullable=False),
    # schema 4: the team server's project of the run (NULL: a local run, no project)
    Column("project_id", Integer, nullable=True),
    Index("ix_runs_project_started", "project_id", "started_at"),
)

windows = Table(
    "windows",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True
    ),
    Column("name", String(255), nullable=False),
    Column("started_at", Double, nullable=False),
    Column("duration_s", Double, nullable=False),
    Column("energy_j", Double, nullable=False),
    Column("measurement", Text, nullable=False),
)

samples = Table(
    "samples",
    metadata,
    _row_id(),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("device", String(64), nullable=False),
    Column("component", String(32), nullable=False),
    Column("t", Double, nullable=False),
    Column("power_w", Double, nullable=True),
    Column("utilization", Double, nullable=True),
    Column("sm_activity", Double, nullable=True),
    Column("memory_used_bytes", Double, nullable=True),
    Column("sm_clock_mhz", Double, nullable=True),
    Column("extra", Text, nullable=True),
    # Leading run_id: also serves lookups by run alone.
    Index("ix_samples_run_id_t", "run_id", "t"),
)

BLOCK_COLUMNS = ("t", "power_w", "utilization", "sm_activity", "memory_used_bytes", "sm_clock_mhz")
"""The columns of a sample block, in order: float64 each, NaN for a missing value."""

sample_blocks = Table(
    "sample_blocks",
    metadata,
    _row_id(),
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("device", String(64), nullable=False),
    Column("component", String(32), nullable=False),
    Column("count", Integer, nullable=False),
    # count × len(BLOCK_COLUMNS) little-endian float64, row by row: the samples of
    # one flush of one device, for analysis that needs millions of samples fast.
    Column("data", LargeBinary, nullable=False),
    Index("ix_sample_blocks_run_id", "run_id"),
)

advisor_state = Table(
    "advisor_state",
    metadata,
    # What an advisor remembers between runs (the batch-size optimizer's
    # observations of a recurring job ...): one JSON document per (namespace, key).
    Column("namespace", String(64), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("value", Text, nullable=False),
    Column("updated_at", Double, nullable=False),
)

projects = Table(
    "projects",
    metadata,
    # schema 4: a team server's projects; every uploaded run belongs to one
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("created_at", Double, nullable=False),
)

tokens = Table(
    "tokens",
    metadata,
    # schema 4: API tokens, stored as the SHA-256 of the secret (never the secret itself)
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("role", String(16), nullable=False),
    Column("token_sha256", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("created_at", Double, nullable=False),
    Column("revoked_at", Double, nullable=True),
)

run_tags = Table(
    "run_tags",
    metadata,
    # schema 4: one row per tag of a run, so filtering by tag is an indexed SQL lookup
    # (runs.tags keeps the JSON document the record shows)
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("key", String(255), primary_key=True),
    Column("value", Text, nullable=False),
    Index("ix_run_tags_key_value", "key", "value"),
)

run_uploads = Table(
    "run_uploads",
    metadata,
    # schema 4: a run a team server received: who sent it, when, the sender's ledger
    # entry for it (JSON), and its totals in columns so a project's aggregates are one
    # GROUP BY (uncertainties are absolute; NULL: not known, e.g. carbon without a location)
    Column("run_id", String(32), ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("project_id", Integer, nullable=False),
    Column("user", String(255), nullable=True),
    Column("uploaded_at", Double, nullable=False),
    Column("started_at", Double, nullable=False),
    Column("energy_j", Double, nullable=True),
    Column("energy_uncertainty_j", Double, nullable=True),
    Column("measured_j", Double, nullable=True),  # of energy_j: from counters or sampled power
    Column("co2_g", Double, nullable=True),
    Column("co2_uncertainty_g", Double, nullable=True),
    Column("cost_usd", Double, nullable=True),
    Column("cost_uncertainty_usd", Double, nullable=True),
    Column("ledger_entry", Text, nullable=True),
    Index("ix_run_uploads_project_started", "project_id", "started_at"),
    Index("ix_run_uploads_project_energy", "project_id", "energy_j"),  # top consumers
    Index("ix_run_uploads_user", "user"),
)

llm_requests = Table(
    "llm_requests",
    metadata,
    # schema 5: one row per request the LLM proxy settled (``status`` running to
    # completed/cancelled/error/unavailable), and one ``idle`` row per flush with the
    # energy drawn while nothing was in flight, so attributed + idle = metered over any
    # period. Energies in joules; ``co2eq_g`` NULL without a location.
    _row_id(),
    Column("request_id", String(40), nullable=False),
    Column("started_at", Double, nullable=False),
    Column("ended_at", Double, nullable=False),
    Column("status", String(16), nullable=False),
    Column("endpoint", String(64), nullable=False),
    Column("model", String(255), nullable=True),
    Column("tenant", String(128), nullable=True),
    Column("stream", Integer, nullable=False),
    Column("prompt_tokens", Integer, nullable=True),
    Column("completion_tokens", Integer, nullable=True),
    Column("token_source", String(16), nullable=True),  # usage, counted or estimated
    Column("ttft_s", Double, nullable=True),
    Column("energy_j", Double, nullable=False),
    Column("uncertainty_j", Double, nullable=False),
    Column("prefill_j", Double, nullable=False),
    Column("decode_j", Double, nullable=False),
    Column("provisional_j", Double, nullable=True),  # what the response carried
    Column("co2eq_g", Double, nullable=True),
    Column("intensity_g_per_kwh", Double, nullable=True),
    Column("method", String(32), nullable=False),
    Column("ratio", Double, nullable=True),  # prefill/decode cost ratio used
    Column("ratio_spread", Double, nullable=True),
    Column("extra", Text, nullable=False),
    Index("ix_llm_requests_started", "started_at"),
    Index("ix_llm_requests_model_started", "model", "started_at"),
    Index("ix_llm_requests_tenant_started", "tenant", "started_at"),
)

llm_serving = Table(
    "llm_serving",
    metadata,
    # schema 6: a team server's per-minute aggregates of the LLM proxies of a project,
    # one row per (proxy, upload batch, UTC minute, model, tenant); a batch sent again
    # after a lost answer writes nothing (the unique key). Idle energy (nothing in
    # flight) has model and tenant "". Energies in joules, uncertainties absolute.
    _row_id(),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE"), nullable=False),
    Column("source", String(64), nullable=False),
    Column("batch", String(64), nullable=False),
    Column("minute", Double, nullable=False),
    Column("model", String(255), nullable=False),
    Column("tenant", String(128), nullable=False),
    Column("requests", Integer, nullable=False),
    Column("cancelled", Integer, nullable=False),
    Column("errors", Integer, nullable=False),
    Column("prompt_tokens", BigInteger, nullable=False),
    Column("completion_tokens", BigInteger, nullable=False),
    Column("energy_j", Double, nullable=False),
    Column("uncertainty_j", Double, nullable=False),
    Column("prefill_j", Double, nullable=False),
    Column("decode_j", Double, nullable=False),
    Column("idle_j", Double, nullable=False),
    Column("co2eq_g", Double, nullable=True),
    Column("method", String(32), nullable=False),
    UniqueConstraint("project_id", "source", "batch", "minute", "model", "tenant",
                     name="uq_llm_serving_batch_key"),
    Index("ix_llm_serving_project_minute", "project_id", "minute"),
)
