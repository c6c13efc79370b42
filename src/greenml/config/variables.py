"""Every ``GREENML_*`` environment variable greenml reads, declared once.

The settings a user repeats (:data:`greenml.config.settings.SETTINGS`) declare their
variable beside their config-file key; every other variable is declared here: paths,
credentials, a distributed job's identity, what ``greenml run`` hands its child, and
the hooks the tests use for hardware that cannot be here. A test holds the source and
the configuration page to this list: a variable read anywhere else, or missing from
the page, fails it. ``greenml config variables`` shows which are set.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, what it is for, and its kind."""

    name: str
    help: str
    kind: str  # setting · path · credential · job · exports · handed · test hook
    secret: bool = False


VARIABLES: tuple[Variable, ...] = (
    Variable("GREENML_SPOOL_DIR", "folder of runs waiting to be stored", "path"),
    Variable("GREENML_SPOOL_DB_URL", "the store a spooled run goes to (set for the ingester)",
             "handed"),
    Variable("GREENML_UPLOAD_DB_URL", "the store a handed-off upload reads (set for the sender)",
             "handed"),
    Variable("GREENML_LEDGER", "the ledger file", "path"),
    Variable("GREENML_LEDGER_KEY", "Ed25519 key that signs new ledger entries", "credential",
             secret=True),
    Variable("GREENML_NO_HOSTNAME", "do not record the host name", "setting"),
    Variable("GREENML_CPU_TDP_W", "CPU TDP in watts, all sockets, for the CPU model", "setting"),
    Variable("GREENML_TENSORBOARD_DIR", "folder of the TensorBoard sink's event files", "path"),
    Variable("GREENML_ELECTRICITYMAPS_TOKEN", "Electricity Maps API token", "credential",
             secret=True),
    Variable("GREENML_WATTTIME_USERNAME", "WattTime API user name", "credential"),
    Variable("GREENML_WATTTIME_PASSWORD", "WattTime API password", "credential", secret=True),
    Variable("GREENML_GPU_STATE", "state file of the GPUs' original power limits", "path"),
    Variable("GREENML_GPU_CLOCK_STATE", "state file of the GPUs' original clocks", "path"),
    Variable("GREENML_AWS_METADATA_URL", "AWS instance metadata service (notices)", "path"),
    Variable("GREENML_GCP_METADATA_URL", "GCP metadata server (notices)", "path"),
    Variable("GREENML_CHECKPOINT_DIR", "where an emitted SkyPilot task mounts checkpoints",
             "handed"),
    Variable("GREENML_EVENTS", "the events file greenml run hands its child", "handed"),
    Variable("GREENML_JOB", "the distributed job this run is a node of (as --job)", "job"),
    Variable("GREENML_NODE_RANK", "this node's rank in the job (as --node-rank)", "job"),
    Variable("GREENML_JOB_NODES", "how many nodes the job has (as --job-nodes)", "job"),
    Variable("GREENML_NODE_NAME", "this node's name in the job", "job"),
    Variable("GREENML_JOB_SCOPE", "what the job's id is unique in (a cluster, a namespace)",
             "job"),
    Variable("GREENML_K8S_JOB_NAME", "a Kubernetes Job's name (set from its pod label)", "job"),
    Variable("GREENML_PIECE", "the piece an emitted interruptible script runs (set by it)",
             "handed"),
    Variable("GREENML_PIECES", "how many pieces that script has (set by it)", "handed"),
    Variable("GREENML_PODINFO_LABELS", "a pod's downward-API labels file (Kubernetes jobs)",
             "job"),
    Variable("GREENML_PUSHGATEWAY", "Pushgateway a finished run is pushed to (as --push-gateway)",
             "exports"),
    Variable("GREENML_OTLP_ENDPOINT", "OTLP/HTTP metrics endpoint (as --otlp-endpoint)",
             "exports"),
    Variable("GREENML_NODE_TOKEN", "token between an LLM proxy and its node agents",
             "credential", secret=True),
    Variable("GREENML_PROC_ROOT", "the exporter reads /proc under this root (a container)",
             "path"),
    Variable("GREENML_CONTAINERS_DIR", "the exporter's containers folder (pod attribution)",
             "path"),
    Variable("GREENML_AGENT_TOKEN", "a job's token for the node agent", "credential",
             secret=True),
    Variable("GREENML_AGENT_TOKEN_FILE", "file holding a job's node-agent token", "path"),
    Variable("GREENML_AGENT_TOKEN_DIR", "folder of the job tokens the Slurm prolog writes",
             "path"),
    Variable("GREENML_SYS_ROOT", "read /sys and /proc under this root (fake trees)", "test hook"),
    Variable("GREENML_FAKE_NVML", "module:factory of a fake NVML", "test hook"),
    Variable("GREENML_FAKE_AMDSMI", "module:factory of a fake amdsmi", "test hook"),
    Variable("GREENML_FAKE_APPLE", "module:factory of a fake zeus_apple_silicon", "test hook"),
)  # fmt: skip


def all_variables() -> dict[str, Variable]:
    """Every declared variable by name: the settings' and the others."""
    from greenml.config.settings import SECRET, SETTINGS

    declared = {s.env: Variable(s.env, s.help, "setting", secret=s.name in SECRET)
                for s in SETTINGS if s.env}  # fmt: skip
    for variable in VARIABLES:
        declared[variable.name] = variable
    return declared
