"""Which distributed job a run belongs to, and which node of it: the record's ``job`` block.

A job measured on many nodes is one ``greenml run`` per node, each storing its
own run; the ``job`` block ties them together. The identity comes from, in
order (the first that answers wins, and the block says which in ``source``):

1. ``greenml run --job ID`` (``option``), or ``GREENML_JOB`` (``env``);
2. Slurm: ``SLURM_JOB_ID`` and ``SLURM_STEP_ID`` (``slurm``);
3. torchrun / TorchElastic: ``TORCHELASTIC_RUN_ID``, or ``PET_RDZV_ID`` that
   Kubeflow's PyTorchJob passes to torchrun (``torchelastic``);
4. Ray: ``RAY_JOB_ID``, or ``RAY_JOB_SUBMISSION_ID`` (``ray``);
5. a Kubernetes Job: ``GREENML_K8S_JOB_NAME`` (set from the pod label
   ``batch.kubernetes.io/job-name`` with the downward API), or the label in a
   downward-API labels file (``GREENML_PODINFO_LABELS``, default
   ``/etc/podinfo/labels``) (``kubernetes``).

Under Slurm, ``--job`` naming the job Slurm runs (``SLURM_JOB_ID``) keeps
what Slurm says of it: its step (``SLURM_STEP_ID``), name
(``SLURM_JOB_NAME``), array job and task (``SLURM_ARRAY_JOB_ID``,
``SLURM_ARRAY_TASK_ID``), ``scheduler: slurm``; a step's expected nodes are the
step's (``SLURM_STEP_NUM_NODES``), not the allocation's. ``GREENML_JOB_SCOPE``
(``allocation``, set by the Slurm prolog; ``step``) says what the run covers.

Node name, node rank, ranks and expected sizes are read the same way (and, in
a pod, its name and namespace: ``POD_NAME``, ``POD_NAMESPACE``), each
with where it came from (``node_source``, ``sizes_source``); an explicit
option always wins. Nothing here guesses: a value no source gives stays null.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

JOB_ENV = "GREENML_JOB"
NODE_RANK_ENV = "GREENML_NODE_RANK"
NODES_ENV = "GREENML_JOB_NODES"
K8S_JOB_ENV = "GREENML_K8S_JOB_NAME"
SCOPE_ENV = "GREENML_JOB_SCOPE"
SCOPES = ("allocation", "step")
PODINFO_ENV = "GREENML_PODINFO_LABELS"
PODINFO_DEFAULT = "/etc/podinfo/labels"
K8S_JOB_LABELS = ("batch.kubernetes.io/job-name", "job-name")
SA_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+/-]{0,199}$")


@dataclass(frozen=True)
class JobRequest:
    """What ``greenml run`` was told about the job (``None``: find it in the environment)."""

    job_id: str | None = None
    node_rank: int | None = None
    expected_nodes: int | None = None
    job_name: str | None = None
    detect: bool = True  # False: only the options count (``--no-job``)


def check_job_id(job_id: str, what: str = "--job") -> str:
    """A job id as given, or ConfigError: 1–200 characters, letters, digits, ``._:@+/-``."""
    text = job_id.strip()
    if not _ID.match(text):
        raise ConfigError(
            f"{what} {job_id!r} is not a job id (1-200 letters, digits or ._:@+/-, "
            "starting with a letter or digit)"
        )
    return text


def job_identity(
    request: JobRequest,
    env: Mapping[str, str] | None = None,
    *,
    include_hostname: bool = True,
    run_name: str | None = None,
) -> dict[str, Any] | None:
    """The ``job`` block of this run, or ``None`` when it belongs to no job.

    Raises:
        ConfigError: ``--job``, ``GREENML_JOB`` or a size given is not valid.
    """
    env = os.environ if env is None else env
    found = _from_option(request) or (_from_env(env) if request.detect else None)
    if found is None:
        if request.node_rank is not None or request.expected_nodes is not None:
            raise ConfigError("--node-rank and --job-nodes need a job: add --job ID")
        return None
    source, job_id, step_id = found
    slurm = _in_slurm_job(env, job_id)
    if slurm and step_id is None:
        step_id = env.get("SLURM_STEP_ID") or None  # --job "$SLURM_JOB_ID" keeps the step
    block: dict[str, Any] = {"job_id": check_job_id(job_id, _what(source)), "source": source}
    if step_id is not None:
        block["step_id"] = step_id
    slurm_name = env.get("SLURM_JOB_NAME") if slurm else None
    block["job_name"] = request.job_name or slurm_name or run_name
    block.update(_node(env, include_hostname))
    block.update(_ranks(env, request, step=slurm and step_id is not None))
    block.update(_pod(env))
    block.update(_slurm(env, slurm, step_id))
    return block


def _in_slurm_job(env: Mapping[str, str], job_id: str) -> bool:
    """Whether ``job_id`` is the Slurm job this process runs in (its id or ``ARRAY_TASK``)."""
    own = env.get("SLURM_JOB_ID")
    if not own:
        return False
    array = f"{env.get('SLURM_ARRAY_JOB_ID')}_{env.get('SLURM_ARRAY_TASK_ID')}"
    return job_id.strip() in (own, array)


def _slurm(env: Mapping[str, str], slurm: bool, step_id: str | None) -> dict[str, Any]:
    """``scheduler``, the array job and task, and ``scope`` (see the module docstring)."""
    scope = env.get(SCOPE_ENV) or None
    if scope is not None and scope not in SCOPES:
        raise ConfigError(f"{SCOPE_ENV}={scope!r} is not one of {', '.join(SCOPES)}")
    if not slurm:
        return {"scope": scope} if scope else {}
    out: dict[str, Any] = {"scheduler": "slurm",
                           "scope": scope or ("step" if step_id is not None else None)}  # fmt: skip
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        out["array_job_id"] = env["SLURM_ARRAY_JOB_ID"]
        out["array_task_id"] = env["SLURM_ARRAY_TASK_ID"]
    return out


def _what(source: str) -> str:
    return {"option": "--job", "env": JOB_ENV}.get(source, f"the {source} job id")


def _from_option(request: JobRequest) -> tuple[str, str, str | None] | None:
    return ("option", request.job_id, None) if request.job_id is not None else None


def _from_env(env: Mapping[str, str]) -> tuple[str, str, str | None] | None:
    if env.get(JOB_ENV):
        return "env", env[JOB_ENV], None
    if env.get("SLURM_JOB_ID"):
        return "slurm", env["SLURM_JOB_ID"], env.get("SLURM_STEP_ID") or None
    for var in ("TORCHELASTIC_RUN_ID", "PET_RDZV_ID"):
        if env.get(var):
            return "torchelastic", env[var], None
    for var in ("RAY_JOB_ID", "RAY_JOB_SUBMISSION_ID"):
        if env.get(var):
            return "ray", env[var], None
    k8s = env.get(K8S_JOB_ENV) or _podinfo_job(env)
    if k8s:
        return "kubernetes", k8s, None
    return None


def _podinfo_job(env: Mapping[str, str]) -> str | None:
    """The Job name in a downward-API labels file (``key="value"`` lines), if mounted."""
    if not env.get("KUBERNETES_SERVICE_HOST") and PODINFO_ENV not in env:
        return None
    try:
        text = Path(env.get(PODINFO_ENV, PODINFO_DEFAULT)).read_text(encoding="utf-8")
    except OSError:
        return None
    labels = dict(_label(line) for line in text.splitlines() if "=" in line)
    return next((labels[k] for k in K8S_JOB_LABELS if labels.get(k)), None)


def _label(line: str) -> tuple[str, str]:
    key, _, value = line.partition("=")
    return key.strip(), value.strip().strip('"')


def _node(env: Mapping[str, str], include_hostname: bool) -> dict[str, Any]:
    """The node's name and where it came from (Slurm, Kubernetes downward API, host name)."""
    for var in ("SLURMD_NODENAME", "NODE_NAME", "GREENML_NODE_NAME"):
        if env.get(var):
            return {"node": env[var], "node_source": var}
    if include_hostname:
        return {"node": socket.gethostname(), "node_source": "hostname"}
    return {"node": None, "node_source": None}


def _pod(env: Mapping[str, str]) -> dict[str, str]:
    """The Kubernetes pod and namespace (downward API ``POD_NAME``, ``POD_NAMESPACE``)."""
    out = {}
    in_pod = bool(env.get("KUBERNETES_SERVICE_HOST"))
    pod = env.get("POD_NAME") or (env.get("HOSTNAME") if in_pod else None)
    namespace = env.get("POD_NAMESPACE")
    if namespace is None and in_pod:
        try:
            namespace = Path(SA_NAMESPACE).read_text(encoding="utf-8").strip() or None
        except OSError:
            namespace = None
    if pod:
        out["pod"] = pod
    if namespace:
        out["namespace"] = namespace
    return out


def _int(env: Mapping[str, str], var: str) -> int | None:
    value = env.get(var)
    if value is None or value.strip() == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{var}={value!r} is not a whole number") from None
    if number < 0:
        raise ConfigError(f"{var}={value!r} is negative")
    return number


def _first(env: Mapping[str, str], *names: str) -> tuple[int | None, str | None]:
    for var in names:
        value = _int(env, var)
        if value is not None:
            return value, var
    return None, None


def _ranks(env: Mapping[str, str], request: JobRequest, *, step: bool = False) -> dict[str, Any]:
    """Node rank, process ranks and expected sizes, each from the first variable set.

    ``step``: a Slurm step, whose node count is the step's, not the allocation's.
    """
    node_rank, rank_var = _first(env, NODE_RANK_ENV, "SLURM_NODEID", "GROUP_RANK", "NODE_RANK",
                                 "PET_NODE_RANK", "JOB_COMPLETION_INDEX")  # fmt: skip
    if request.node_rank is not None:
        node_rank, rank_var = request.node_rank, "option"
    step_nodes = ("SLURM_STEP_NUM_NODES",) if step else ()
    nodes, nodes_var = _first(env, NODES_ENV, *step_nodes, "SLURM_JOB_NUM_NODES", "SLURM_NNODES",
                              "PET_NNODES")  # fmt: skip
    if request.expected_nodes is not None:
        nodes, nodes_var = request.expected_nodes, "option"
    world, _ = _first(env, "WORLD_SIZE", "SLURM_NTASKS")
    local_world, _ = _first(env, "LOCAL_WORLD_SIZE", "SLURM_NTASKS_PER_NODE")
    if nodes is None and world and local_world:
        nodes, nodes_var = world // local_world, "WORLD_SIZE/LOCAL_WORLD_SIZE"
    if nodes is not None and nodes < 1:
        raise ConfigError(f"expected node count must be at least 1, got {nodes} ({nodes_var})")
    if node_rank is not None and nodes is not None and node_rank >= nodes:
        raise ConfigError(
            f"node rank {node_rank} ({rank_var}) is not below the job's {nodes} node(s) "
            f"({nodes_var})"
        )
    global_rank, _ = _first(env, "RANK", "SLURM_PROCID")
    local_rank, _ = _first(env, "LOCAL_RANK", "SLURM_LOCALID")
    return {
        "node_rank": node_rank,
        "node_rank_source": rank_var,
        "local_rank": local_rank,
        "global_rank": global_rank,
        "world_size": world,
        "expected_nodes": nodes,
        "expected_nodes_source": nodes_var,
    }
