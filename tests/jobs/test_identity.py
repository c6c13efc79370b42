"""Which job and node a run belongs to, from options and each engine's environment."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.run.job_identity import JobRequest, check_job_id, job_identity

AUTO = JobRequest()


def test_nothing_in_the_environment_is_no_job() -> None:
    assert job_identity(AUTO, {"HOME": "/root"}) is None


def test_slurm_gives_job_step_node_and_sizes() -> None:
    env = {"SLURM_JOB_ID": "991", "SLURM_STEP_ID": "3", "SLURM_NODEID": "2",
           "SLURM_JOB_NUM_NODES": "8", "SLURMD_NODENAME": "gpu017", "SLURM_PROCID": "2",
           "SLURM_LOCALID": "0", "SLURM_NTASKS": "8", "SLURM_JOB_NAME": "llm"}  # fmt: skip
    block = job_identity(AUTO, env)
    assert block == {
        "job_id": "991", "source": "slurm", "step_id": "3", "job_name": "llm",
        "node": "gpu017", "node_source": "SLURMD_NODENAME", "node_rank": 2,
        "node_rank_source": "SLURM_NODEID", "local_rank": 0, "global_rank": 2,
        "world_size": 8, "expected_nodes": 8, "expected_nodes_source": "SLURM_JOB_NUM_NODES",
        "scheduler": "slurm", "scope": "step",
    }  # fmt: skip


def test_job_given_as_slurms_own_keeps_step_name_array_and_the_steps_node_count() -> None:
    env = {"SLURM_JOB_ID": "12", "SLURM_STEP_ID": "1", "SLURM_JOB_NAME": "sweep",
           "SLURM_ARRAY_JOB_ID": "10", "SLURM_ARRAY_TASK_ID": "2", "SLURM_NODEID": "1",
           "SLURM_STEP_NUM_NODES": "2", "SLURM_JOB_NUM_NODES": "4"}  # fmt: skip
    for asked in ("12", "10_2"):
        block = job_identity(JobRequest(job_id=asked), env, include_hostname=False)
        assert block is not None
        assert (block["source"], block["step_id"], block["job_name"], block["scheduler"]) == (
            "option", "1", "sweep", "slurm")  # fmt: skip
        assert (block["array_job_id"], block["array_task_id"]) == ("10", "2")
        assert (block["expected_nodes"], block["expected_nodes_source"]) == (
            2, "SLURM_STEP_NUM_NODES")  # fmt: skip
    other = job_identity(JobRequest(job_id="elsewhere"), env, include_hostname=False)
    assert other is not None and "step_id" not in other and "scheduler" not in other


def test_the_prologs_scope_is_recorded_and_a_bad_one_refused() -> None:
    env = {"SLURM_JOB_ID": "7", "GREENML_JOB_SCOPE": "allocation"}
    block = job_identity(JobRequest(job_id="7"), env, include_hostname=False)
    assert block is not None and block["scope"] == "allocation" and "step_id" not in block
    with pytest.raises(ConfigError, match="GREENML_JOB_SCOPE"):
        job_identity(JobRequest(job_id="7"), {**env, "GREENML_JOB_SCOPE": "node"})


def test_torchrun_gives_the_node_count_from_world_and_local_sizes() -> None:
    env = {"TORCHELASTIC_RUN_ID": "rdzv-7", "GROUP_RANK": "1", "WORLD_SIZE": "16",
           "LOCAL_WORLD_SIZE": "8", "RANK": "9", "LOCAL_RANK": "1"}  # fmt: skip
    block = job_identity(AUTO, env, include_hostname=False, run_name="bert")
    assert block is not None
    assert (block["source"], block["job_id"], block["node_rank"], block["expected_nodes"]) == (
        "torchelastic", "rdzv-7", 1, 2)  # fmt: skip
    assert block["expected_nodes_source"] == "WORLD_SIZE/LOCAL_WORLD_SIZE"
    assert block["job_name"] == "bert" and block["node"] is None  # --no-hostname: no name


def test_ray_and_kubernetes() -> None:
    ray = job_identity(AUTO, {"RAY_JOB_ID": "02000000"})
    assert ray is not None and ray["source"] == "ray" and ray["job_id"] == "02000000"
    k8s = job_identity(AUTO, {"GREENML_K8S_JOB_NAME": "train-bert", "NODE_NAME": "ip-10-0-1-7",
                              "JOB_COMPLETION_INDEX": "3"})  # fmt: skip
    assert k8s is not None
    assert (k8s["source"], k8s["job_id"], k8s["node"], k8s["node_rank"]) == (
        "kubernetes", "train-bert", "ip-10-0-1-7", 3)  # fmt: skip


def test_a_pod_records_its_name_and_namespace() -> None:
    block = job_identity(AUTO, {"GREENML_K8S_JOB_NAME": "j", "POD_NAME": "j-0-abcde",
                                "POD_NAMESPACE": "ml"})  # fmt: skip
    assert block is not None and (block["pod"], block["namespace"]) == ("j-0-abcde", "ml")


def test_a_downward_api_labels_file_names_the_kubernetes_job(tmp_path: Path) -> None:
    labels = tmp_path / "labels"
    labels.write_text('app="trainer"\nbatch.kubernetes.io/job-name="train-7"\n')
    block = job_identity(AUTO, {"KUBERNETES_SERVICE_HOST": "10.0.0.1",
                                "GREENML_PODINFO_LABELS": str(labels)})  # fmt: skip
    assert block is not None and (block["source"], block["job_id"]) == ("kubernetes", "train-7")


def test_the_option_wins_over_the_environment() -> None:
    env = {"SLURM_JOB_ID": "991", "SLURM_NODEID": "1", "SLURM_JOB_NUM_NODES": "4"}
    block = job_identity(JobRequest(job_id="mine", node_rank=0, expected_nodes=2), env)
    assert block is not None
    assert (block["source"], block["job_id"], block["node_rank"], block["expected_nodes"]) == (
        "option", "mine", 0, 2)  # fmt: skip
    assert job_identity(JobRequest(detect=False), env) is None


@pytest.mark.parametrize(
    ("request_", "env", "message"),
    [
        (JobRequest(job_id="a b"), {}, "--job 'a b' is not a job id"),
        (JobRequest(node_rank=1), {}, "need a job: add --job ID"),
        (AUTO, {"SLURM_JOB_ID": "1", "SLURM_NODEID": "x"}, "SLURM_NODEID='x' is not a whole"),
        (AUTO, {"SLURM_JOB_ID": "1", "SLURM_NODEID": "4", "SLURM_JOB_NUM_NODES": "4"},
         "node rank 4 \\(SLURM_NODEID\\) is not below the job's 4 node"),
        (AUTO, {"GREENML_JOB": "../../etc"}, "GREENML_JOB '../../etc' is not a job id"),
    ],
)  # fmt: skip
def test_bad_identities_are_one_clear_error(
    request_: JobRequest, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        job_identity(request_, env)


_VARS = ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID", "SLURM_JOB_NUM_NODES", "WORLD_SIZE",
         "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "GROUP_RANK", "RANK", "JOB_COMPLETION_INDEX",
         "GREENML_JOB", "RAY_JOB_ID", "NODE_NAME")  # fmt: skip


@given(st.dictionaries(st.sampled_from(_VARS), st.text(max_size=12), max_size=6))
def test_any_environment_gives_a_block_or_a_config_error(env: dict[str, str]) -> None:
    try:
        block = job_identity(AUTO, env, include_hostname=False)
    except ConfigError:
        return
    if block is not None:
        assert check_job_id(block["job_id"]) == block["job_id"]
        rank, nodes = block["node_rank"], block["expected_nodes"]
        assert rank is None or nodes is None or 0 <= rank < nodes


def test_greenml_run_refuses_a_bad_identity_before_the_command_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.cli import main

    marker = tmp_path / "ran"
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_NODEID", "5")
    monkeypatch.setenv("SLURM_JOB_NUM_NODES", "4")
    code = main(["run", "-q", "--gpus", "none", "--db", f"sqlite:///{tmp_path / 'g.db'}",
                 "--", "touch", str(marker)])  # fmt: skip
    assert code == 2 and not marker.exists()
    assert capsys.readouterr().err.strip() == (
        "greenml: error: node rank 5 (SLURM_NODEID) is not below the job's 4 node(s) "
        "(SLURM_JOB_NUM_NODES)"
    )


@given(st.text(max_size=30))
def test_any_job_scope_is_kept_or_refused_in_one_line(scope: str) -> None:
    env = {"SLURM_JOB_ID": "7", "GREENML_JOB_SCOPE": scope}
    try:
        block = job_identity(JobRequest(job_id="7"), env, include_hostname=False)
    except ConfigError as exc:
        assert "GREENML_JOB_SCOPE" in str(exc) and "\n" not in str(exc)
        return
    assert block is not None and block["scope"] in ("allocation", "step", None)
