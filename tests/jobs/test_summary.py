"""A job added up over its nodes' runs, on SQLite and PostgreSQL; what it refuses to merge."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.cli import main
from greenml.errors import JobNotFound
from greenml.jobs.summary import summarize_job
from greenml.store.jobs import all_jobs, job_runs
from greenml.store.repository import Store
from tests.jobs.builders import node_run


def _job(rank: int, nodes: int = 4, job_id: str = "j-1", **kw: object) -> dict[str, object]:
    return {"job_id": job_id, "node": f"node-{rank}", "node_rank": rank,
            "expected_nodes": nodes, "job_name": "bert", **kw}  # fmt: skip


def test_four_nodes_add_up_with_their_own_carbon(store: Store) -> None:
    zones = ["FR", "FR", "DE", "PL"]
    kg = [0.05, 0.05, 0.3, 0.6]
    ids = [
        node_run(store, _job(r), gpu_j=[1000.0 * (r + 1), 500.0], uncertainty_rel=0.05 * (r + 1),
                 start_s=r, duration_s=100, carbon_kg=kg[r], location=zones[r], cost_usd=0.1)
        for r in range(4)
    ]  # fmt: skip
    node_run(store, _job(0, job_id="other"), gpu_j=[1e6])  # another job: not merged
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert [n.run_id for n in s.nodes] == ids and [n.node_rank for n in s.nodes] == [0, 1, 2, 3]
    energies = [1500.0, 2500.0, 3500.0, 4500.0]
    assert s.energy["total_j"] == pytest.approx(sum(energies))
    spread = sum(e * 0.05 * (i + 1) for i, e in enumerate(energies))  # one counter model: linear
    assert s.energy["uncertainty_rel"] == pytest.approx(spread / sum(energies))
    assert s.carbon == {**s.carbon, "status": "ok", "kg": pytest.approx(sum(kg)),
                        "locations": ["DE", "FR", "PL"]}  # fmt: skip
    assert s.cost["usd"] == pytest.approx(0.4) and s.cost["status"] == "ok"
    assert s.expected_nodes == 4 and s.missing_nodes == [] and s.problems == []
    assert s.span["wall_s"] == pytest.approx(103.0)
    assert s.nodes[3].devices["gpu0"]["energy_j"] == 4000.0
    assert list(all_jobs(store)) == ["j-1", "other"]  # newest first (by its latest run)


def test_a_node_that_never_reported_is_flagged(store: Store) -> None:
    for r in (0, 1, 3):
        node_run(store, _job(r), gpu_j=[100.0])
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.missing_nodes == [2] and s.missing_count == 1
    assert s.problems == ["1 of 4 expected node(s) never reported (node ranks 2)"]
    assert s.energy["total_j"] == 300.0


def test_two_runs_claiming_one_node_rank_count_once_and_the_other_is_named(
    store: Store,
) -> None:
    a = node_run(store, _job(0), gpu_j=[100.0])
    b = node_run(store, _job(1), gpu_j=[200.0])
    c = node_run(store, _job(1), gpu_j=[200.0], start_s=5)
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.conflicts == [{"step_id": None, "node": "rank 1", "run_ids": [b, c],
                            "counted": b, "not_counted": [c]}]  # fmt: skip
    assert s.energy["total_j"] == 300.0 and s.energy["nodes_counted"] == 2
    assert [n.counted for n in s.nodes] == [True, True, False] and s.nodes[0].run_id == a
    assert s.nodes[2].not_counted_why == f"rank 1 is measured by run {b}"
    assert f"rank 1 is claimed by 2 runs: {b} counted, {c} not counted" in s.problems


def test_a_prologs_allocation_run_covers_the_step_runs_on_its_node(store: Store) -> None:
    whole = [node_run(store, _job(r, scope="allocation"), gpu_j=[1000.0]) for r in range(4)]
    steps = [node_run(store, _job(r, step_id="0", scope="step"), gpu_j=[800.0]) for r in range(4)]
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.energy["total_j"] == 4000.0 and s.conflicts == [] and s.problems == []
    assert {n.run_id for n in s.nodes if n.counted} == set(whole)
    inner = [n for n in s.nodes if n.run_id in steps]
    assert all(not n.counted and "whole allocation" in (n.not_counted_why or "") for n in inner)
    assert s.to_dict()["seen_nodes"] == 4 and s.expected_nodes == 4


def test_a_narrow_step_misses_no_node_and_two_widths_are_not_elastic(store: Store) -> None:
    for r in range(2):
        node_run(store, _job(r, nodes=2, step_id="0", node=f"node-{r + 2}"), gpu_j=[10.0])
    for r in range(4):
        node_run(store, _job(r, nodes=4, step_id="1"), gpu_j=[10.0])
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.elastic is None and s.problems == [] and s.missing_count == 0
    assert s.expected_nodes == 4 and s.energy["total_j"] == 60.0


def test_a_job_with_no_counted_run_has_no_energy_figure() -> None:
    from greenml.jobs.summary import _energy

    assert _energy([])["status"] == "none counted"


def test_the_same_rank_in_two_slurm_steps_is_no_conflict(store: Store) -> None:
    for step in ("0", "1"):
        node_run(store, _job(0, nodes=1, step_id=step), gpu_j=[100.0])
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.conflicts == [] and s.energy["total_j"] == 200.0


def test_a_size_that_changes_mid_job_is_stated_not_guessed(store: Store) -> None:
    node_run(store, _job(0, nodes=4, world_size=32), gpu_j=[100.0])
    node_run(store, _job(1, nodes=3, world_size=24), gpu_j=[100.0])
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.expected_nodes is None and s.missing_nodes is None
    assert s.elastic is not None and set(s.elastic["expected_nodes"]) == {"3", "4"}
    assert any("changed mid-job (elastic)" in p for p in s.problems)


def test_an_elastic_jobs_rank_0_running_again_in_the_resized_phase_counts_both_runs(
    store: Store,
) -> None:
    """Issue 29: 2 nodes, then resized to 1 where rank 0 runs again: 11.3 J, not 5.65 J."""
    first = [node_run(store, _job(r, nodes=2, world_size=2), gpu_j=[2.825], duration_s=10)
             for r in range(2)]  # fmt: skip
    again = node_run(store, _job(0, nodes=1, world_size=1), gpu_j=[5.65], start_s=20,
                     duration_s=10)  # fmt: skip
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.energy["total_j"] == pytest.approx(11.3) and s.energy["nodes_counted"] == 3
    assert {n.run_id for n in s.nodes if n.counted} == {*first, again}
    assert s.conflicts == [] and s.elastic is not None


def test_a_restarted_rank_counts_each_run_and_an_overlapping_one_once(store: Store) -> None:
    """Runs of one rank one after the other count (clocks 0.5 s apart allowed); one that
    overlaps another measured the same energy: named, not counted."""
    a = node_run(store, _job(0, nodes=1), gpu_j=[100.0], duration_s=10)
    b = node_run(store, _job(0, nodes=1), gpu_j=[70.0], start_s=9.5, duration_s=10)
    c = node_run(store, _job(0, nodes=1), gpu_j=[50.0], start_s=12, duration_s=3)
    s = summarize_job("j-1", job_runs(store, "j-1"))
    assert s.energy["total_j"] == pytest.approx(170.0)
    assert s.conflicts == [{"step_id": None, "node": "rank 0", "run_ids": [b, c],
                            "counted": b, "not_counted": [c]}]  # fmt: skip
    assert {n.run_id for n in s.nodes if n.counted} == {a, b}


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(gaps=st.lists(st.floats(0.0, 50.0), min_size=1, max_size=5),
       joules=st.lists(st.floats(0.1, 1e4), min_size=5, max_size=5))  # fmt: skip
def test_runs_of_one_rank_one_after_another_all_count(
    store: Store, gaps: list[float], joules: list[float]
) -> None:
    """Property: however many times a rank runs again, after any pause, every run counts."""
    job_id = f"seq-{uuid.uuid4().hex[:8]}"
    start, expected = 0.0, 0.0
    for gap, energy in zip(gaps, joules, strict=False):
        node_run(store, _job(0, nodes=1, job_id=job_id), gpu_j=[energy], start_s=start,
                 duration_s=10)  # fmt: skip
        start += 10 + gap
        expected += energy
    s = summarize_job(job_id, job_runs(store, job_id))
    assert s.conflicts == [] and s.energy["total_j"] == pytest.approx(expected)


def test_a_job_with_no_runs_is_an_error(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from greenml.store import open_store

    with open_store(db_url) as store:
        node_run(store, _job(0), gpu_j=[1.0])
        with pytest.raises(JobNotFound, match="no run belongs to job 'j-2'"):
            job_runs(store, "j-2")
        with pytest.raises(JobNotFound):
            job_runs(store, "j-")  # a prefix is not a job id
    assert main(["jobs", "show", "j-2", "--db", db_url]) == 3  # not found
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        "greenml: error: no run belongs to job 'j-2' (see `greenml jobs list`)"
    )
    assert captured.out == ""


def test_jobs_show_json_has_the_documented_keys(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from greenml.store import open_store

    with open_store(db_url) as store:
        for r in range(2):
            node_run(store, _job(r, nodes=3), gpu_j=[10.0, 20.0], carbon_kg=0.1, location="FR")
    assert main(["jobs", "show", "j-1", "--db", db_url, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"job_id", "nodes", "expected_nodes", "missing_nodes", "energy", "carbon",
            "cost"} <= set(data)  # fmt: skip
    assert [(n["node"], n["node_rank"], n["energy_j"]) for n in data["nodes"]] == [
        ("node-0", 0, 30.0), ("node-1", 1, 30.0)]  # fmt: skip
    assert all(len(n["run_id"]) == 12 for n in data["nodes"])
    assert data["missing_nodes"] == [2] and data["energy"]["total_j"] == 60.0
    assert {"total_j", "uncertainty_rel"} <= set(data["energy"])
    assert data["carbon"]["kg"] == pytest.approx(0.2) and data["cost"]["status"] == "unknown"
    assert main(["jobs", "list", "--db", db_url, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(j["job_id"], j["seen_nodes"], j["missing_count"]) for j in listed] == [("j-1", 2, 1)]
    assert main(["runs", "show", data["nodes"][1]["run_id"], "--db", db_url]) == 0
    assert "j-1 (option) · node node-1 · node rank 1 of 3" in capsys.readouterr().out


def test_a_report_takes_a_job(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from greenml.store import open_store

    with open_store(db_url) as store:
        for r in range(3):
            node_run(store, _job(r, nodes=3), gpu_j=[3.6e6], carbon_kg=0.5, location="FR")
        node_run(store, _job(2, nodes=3), gpu_j=[3.6e6], start_s=9)  # rank 2 twice: named
    assert main(["report", "--job", "j-1", "--db", db_url, "--format", "json"]) == 0
    captured = capsys.readouterr()
    statement = json.loads(captured.out)["sections"][0]["paragraphs"][0]
    assert "rank 2 is claimed by 2 runs" in captured.err
    assert "(3 runs," in statement, statement
    assert "used 3.0 kWh" in statement, statement  # nodes 0, 1 and the first run of 2


def test_a_record_with_a_job_block_fits_the_schema_and_reads_back_exactly(store: Store) -> None:
    import jsonschema

    from greenml.ledger.canonical import canonical_json
    from greenml.record.run_record import RunRecord
    from greenml.record.schema import shipped_schema_text

    run_id = node_run(store, _job(1, step_id="3", pod="p-1", namespace="ml"), gpu_j=[5.0])
    record = store.get_record(run_id)
    jsonschema.Draft202012Validator(json.loads(shipped_schema_text())).validate(record)
    typed = RunRecord.from_dict(record, strict=True)
    assert typed.job is not None and typed.job.node_rank == 1 and typed.job.pod == "p-1"
    assert canonical_json(RunRecord.from_dict(record).to_dict()) == canonical_json(record)
    bad = {**record, "job": {**record["job"], "node_rank": -1}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(json.loads(shipped_schema_text())).validate(bad)


@pytest.fixture(scope="module")
def ids_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    from greenml.store import open_store

    with open_store(f"sqlite:///{tmp_path_factory.mktemp('ids') / 'ids.db'}") as store:
        yield store


_IDS = st.text(alphabet='ab%_\\"/.:é', min_size=1, max_size=6)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(stored=st.lists(_IDS, min_size=1, max_size=4, unique=True), asked=_IDS)
def test_a_job_id_matches_itself_only(ids_store: Store, stored: list[str], asked: str) -> None:
    """Wildcards and quotes in ids (LIKE, JSON escaping) never match another job."""
    store = ids_store
    token = f"t{uuid.uuid4().hex[:8]}-"  # one store for every example: ids made unique per example
    for job_id in stored:
        node_run(store, _job(0, job_id=token + job_id), gpu_j=[1.0])
    if asked in stored:
        (found,) = job_runs(store, token + asked)
        assert found.job is not None and found.job.job_id == token + asked
    else:
        with pytest.raises(JobNotFound):
            job_runs(store, token + asked)
    mine = [j for j in all_jobs(store) if j.startswith(token)]
    assert sorted(mine) == sorted(token + j for j in stored)
