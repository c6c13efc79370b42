"""Store behaviour, run on both SQLite and PostgreSQL (see the ``db_url`` fixture)."""

from __future__ import annotations

import multiprocessing
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenml.errors import ConfigError, RunNotFound, StoreError
from greenml.measure.measurement import Sample
from greenml.store import open_store, repository
from greenml.store.record import CORE_KEYS, PARTIAL_NOTE
from greenml.store.repository import Store
from tests.store import _workers
from tests.store.conftest import make_measurement

REPO_ROOT = Path(__file__).resolve().parents[2]
HOST = socket.gethostname()


def _new_run(store: Store, **kw: Any) -> str:
    args: dict[str, Any] = {
        "name": "demo",
        "command": ["python", "train.py", "--lr", "0.1"],
        "tags": {"team": "nlp"},
        "started_at": 1_714_564_800.25,
        "pid": os.getpid(),
        "hostname": HOST,
    }
    args.update(kw)
    return store.create_run(**args)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_full_record_round_trip(store: Store) -> None:
    run_id = _new_run(store, name="entraînement")
    assert len(run_id) == 12 and int(run_id, 16) >= 0
    window = make_measurement()
    store.add_window(run_id, window)
    store.set_environment(run_id, {"gpus": ["H100"], "python": "3.11"})
    store.update_extra(run_id, {"carbon": {"total_g": 12.5}})
    store.update_extra(run_id, {"cost": {"total_usd": 0.4}, "carbon": {"total_g": 13.0}})
    store.finish_run(
        run_id,
        status="completed",
        exit_code=0,
        duration_s=61.5,
        energy=window.to_dict(),
        ended_at=1_714_564_861.75,
    )

    rec = store.get_record(run_id)
    assert set(rec) == CORE_KEYS | {"carbon", "cost"}
    assert rec["id"] == run_id
    assert rec["name"] == "entraînement"
    assert rec["command"] == ["python", "train.py", "--lr", "0.1"]
    assert rec["tags"] == {"team": "nlp"}
    assert rec["started_at"] == "2024-05-01T12:00:00.250000+00:00"
    assert rec["ended_at"] == "2024-05-01T12:01:01.750000+00:00"
    assert rec["duration_s"] == 61.5
    assert rec["exit_code"] == 0
    assert rec["status"] == "completed"
    assert rec["energy"] == window.to_dict()
    assert rec["energy"]["components"]["gpu"]["devices"]["gpu0"]["name"] == "NVIDIA H100 80GB HBM3"
    assert rec["environment"] == {"gpus": ["H100"], "python": "3.11"}
    assert rec["windows"] == [
        {
            "name": "train",
            "started_at": "2024-05-01T12:00:00+00:00",
            "duration_s": 60.0,
            "energy_j": 1500.0,
        }
    ]
    assert rec["carbon"] == {"total_g": 13.0}  # shallow merge: later patch wins
    assert rec["cost"] == {"total_usd": 0.4}


def test_record_of_fresh_run_has_defaults(store: Store) -> None:
    rec = store.get_record(_new_run(store))
    assert rec["status"] == "running"
    assert rec["environment"] == {}
    assert rec["windows"] == []
    assert rec["ended_at"] is None and rec["exit_code"] is None
    assert rec["energy"]["total_j"] == 0.0 and rec["energy"]["components"] == {}


def test_prefix_lookup_and_ambiguity(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = iter(["abc000000001", "abc000000002", "def000000003"])
    monkeypatch.setattr(repository, "new_run_id", lambda: next(ids))
    for _ in range(3):
        _new_run(store)
    assert store.get_record("def")["id"] == "def000000003"
    assert store.get_record("ABC000000002")["id"] == "abc000000002"
    assert store.resolve_id("abc000000001") == "abc000000001"
    with pytest.raises(StoreError) as ambiguous:
        store.get_record("abc")
    assert not isinstance(ambiguous.value, RunNotFound)
    assert "ambiguous" in str(ambiguous.value)
    assert "abc000000001" in str(ambiguous.value) and "abc000000002" in str(ambiguous.value)
    with pytest.raises(RunNotFound, match="no run matches 'xyz'"):
        store.get_record("xyz")
    with pytest.raises(RunNotFound):
        store.get_record("a%")  # LIKE wildcards are matched literally
    with pytest.raises(RunNotFound):
        store.get_record("")


def test_list_runs_newest_first_with_filters(store: Store) -> None:
    old = _new_run(store, name="a", started_at=1000.0, tags={"team": "cv"})
    new = _new_run(store, name="b", started_at=3000.0, tags={"team": "nlp", "gpu": "h100"})
    mid = _new_run(store, name="a", started_at=2000.0, tags={"team": "nlp"})
    store.finish_run(
        mid, status="failed", exit_code=3, duration_s=5.0, energy=make_measurement().to_dict(),
        ended_at=2005.0,
    )  # fmt: skip

    assert [r["id"] for r in store.list_runs()] == [new, mid, old]
    assert [r["id"] for r in store.list_runs(limit=2)] == [new, mid]
    assert [r["id"] for r in store.list_runs(name="a")] == [mid, old]
    assert [r["id"] for r in store.list_runs(tag={"team": "nlp"})] == [new, mid]
    assert [r["id"] for r in store.list_runs(tag={"team": "nlp"}, limit=1)] == [new]
    assert [r["id"] for r in store.list_runs(tag={"team": "nlp", "gpu": "h100"})] == [new]
    assert store.list_runs(name="zzz") == []

    row = store.list_runs(name="a")[0]
    assert set(row) == {
        "id", "name", "status", "started_at", "duration_s", "total_kwh", "exit_code", "command",
        "tags",
    }  # fmt: skip
    assert row["status"] == "failed" and row["exit_code"] == 3 and row["duration_s"] == 5.0
    assert row["started_at"] == "1970-01-01T00:33:20+00:00"
    assert row["total_kwh"] == pytest.approx(1500.0 / 3.6e6)
    assert row["command"] == ["python", "train.py", "--lr", "0.1"]


def test_samples_ordered_with_metric_columns_and_extra(store: Store) -> None:
    run_id = _new_run(store)
    store.add_samples(
        run_id,
        [
            Sample("gpu0", "gpu", 12.0, 250.5, {"utilization": 0.9, "sm_clock_mhz": 1980.0}),
            Sample("cpu0", "cpu", 10.0, None, {"utilization": 0.3, "temperature_c": 61.0}),
            Sample(
                "gpu0", "gpu", 11.0, 240.0,
                {"sm_activity": 0.7, "memory_used_bytes": 4.0e10, "pcie_tx_bytes": 5.0},
            ),
        ],
    )  # fmt: skip
    store.add_samples(run_id, [])
    rows = store.samples(run_id)
    assert [r["time_s"] for r in rows] == [10.0, 11.0, 12.0]
    assert rows[0] == {
        "time_s": 10.0, "device": "cpu0", "component": "cpu", "power_w": None,
        "utilization": 0.3, "sm_activity": None, "memory_used_bytes": None,
        "sm_clock_mhz": None, "extra": {"temperature_c": 61.0},
    }  # fmt: skip
    assert rows[1]["memory_used_bytes"] == 4.0e10 and rows[1]["sm_activity"] == 0.7
    assert rows[1]["extra"] == {"pcie_tx_bytes": 5.0}
    assert rows[2]["power_w"] == 250.5 and rows[2]["sm_clock_mhz"] == 1980.0
    assert rows[2]["extra"] == {}
    assert store.samples("000000000000") == []


def test_windows_keep_order_and_measurement(store: Store) -> None:
    run_id = _new_run(store)
    first, second = make_measurement("epoch-1", 100.0), make_measurement("epoch-2", 200.0)
    store.add_windows(run_id, [first, second])
    store.add_window(run_id, make_measurement("eval", 10.0))
    got = store.windows(run_id)
    assert [w["name"] for w in got] == ["epoch-1", "epoch-2", "eval"]
    assert got[1]["energy_j"] == 500.0
    assert got[1]["measurement"] == second.to_dict()
    assert got[0]["started_at"] == "2024-05-01T12:00:00+00:00"
    in_record = store.get_record(run_id)["windows"]
    assert [w["name"] for w in in_record] == ["epoch-1", "epoch-2", "eval"]


def test_status_of_running_runs(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    alive = _new_run(store)
    dead = _new_run(store, pid=_dead_pid())
    elsewhere = _new_run(store, hostname="another-host", pid=1)
    assert store.get_record(alive)["status"] == "running"
    assert store.get_record(dead)["status"] == "incomplete"
    assert store.get_record(elsewhere)["status"] == "running"  # fresh heartbeat
    statuses = {r["id"]: r["status"] for r in store.list_runs()}
    assert statuses == {alive: "running", dead: "incomplete", elsewhere: "running"}

    later = time.time() + 31.0
    monkeypatch.setattr(repository, "_now", lambda: later)
    assert store.get_record(elsewhere)["status"] == "incomplete"  # stale heartbeat
    store.heartbeat(elsewhere)
    assert store.get_record(elsewhere)["status"] == "running"


def test_partial_energy_from_samples_of_dead_run(store: Store) -> None:
    run_id = _new_run(store, pid=_dead_pid())
    gpu = [Sample("gpu0", "gpu", 100.0 + i, 100.0) for i in range(11)]  # 100 W x 10 s
    gpu1 = [Sample("gpu1", "gpu", 100.0 + 2 * i, 50.0 + 10 * i) for i in range(3)]  # 240 J
    cpu = [Sample("cpu0", "cpu", 100.0 + i, 40.0) for i in range(6)]  # 40 W x 5 s
    lone = [Sample("dram0", "dram", 100.0, 5.0), Sample("dram0", "dram", 101.0, None)]
    store.add_samples(run_id, cpu + gpu1[::-1] + gpu + lone)
    rec = store.get_record(run_id)
    assert rec["status"] == "incomplete"
    energy = rec["energy"]
    assert energy["method"] == "power-integrated"
    assert energy["note"] == PARTIAL_NOTE
    assert energy["components"]["gpu"]["devices"]["gpu0"]["energy_j"] == pytest.approx(1000.0)
    assert energy["components"]["gpu"]["devices"]["gpu1"]["energy_j"] == pytest.approx(240.0)
    assert energy["components"]["gpu"]["energy_j"] == pytest.approx(1240.0)
    assert energy["components"]["cpu"]["energy_j"] == pytest.approx(200.0)
    assert energy["components"]["gpu"]["method"] == "power-integrated"
    assert "dram" not in energy["components"]  # one power reading: nothing to integrate
    assert energy["total_j"] == pytest.approx(1440.0)
    assert energy["total_kwh"] == pytest.approx(1440.0 / 3.6e6)


def test_killed_process_reads_incomplete_with_flushed_samples(db_url: str) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT / "src"), str(REPO_ROOT)]))
    code = f"from tests.store._workers import killed_run; killed_run({db_url!r}, 11)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert proc.returncode == -9, proc.stderr
    run_id = proc.stdout.strip()
    with open_store(db_url) as store:
        rec = store.get_record(run_id)
        assert rec["status"] == "incomplete"
        assert rec["energy"]["total_j"] == pytest.approx(2000.0)  # 200 W x 10 s
        assert rec["energy"]["note"] == PARTIAL_NOTE
        assert len(store.samples(run_id)) == 11


def test_writes_to_unknown_run(store: Store) -> None:
    with pytest.raises(RunNotFound):
        store.heartbeat("000000000000")
    with pytest.raises(RunNotFound):
        store.set_environment("000000000000", {})
    with pytest.raises(RunNotFound):
        store.update_extra("000000000000", {"carbon": 1})
    with pytest.raises(RunNotFound):
        store.finish_run(
            "000000000000", status="completed", exit_code=0, duration_s=1.0, energy={},
            ended_at=1.0,
        )  # fmt: skip
    with pytest.raises(StoreError, match="cannot add samples"):  # foreign key
        store.add_samples("000000000000", [Sample("gpu0", "gpu", 1.0, 1.0)])


def test_bad_arguments_are_config_errors(store: Store) -> None:
    run_id = _new_run(store)
    with pytest.raises(ConfigError, match="status"):
        store.finish_run(
            run_id, status="done", exit_code=0, duration_s=1.0, energy={}, ended_at=1.0
        )
    with pytest.raises(ConfigError, match="reserved"):
        store.update_extra(run_id, {"status": "completed"})
    assert store.get_record(run_id)["status"] == "running"


def test_closed_store_raises_store_error(db_url: str) -> None:
    store = open_store(db_url)
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.list_runs()


def test_newer_schema_is_refused_and_data_kept(db_url: str) -> None:
    import sqlalchemy as sa

    from greenml.store.url import resolve_url

    with open_store(db_url) as store:
        run_id = _new_run(store)
    engine = sa.create_engine(resolve_url(db_url))
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE meta SET value = '999' WHERE key = 'schema_version'"))
    with pytest.raises(StoreError, match="schema version 999 is newer") as err:
        open_store(db_url)
    assert "\n" not in str(err.value)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE meta SET value = '1' WHERE key = 'schema_version'"))
        assert conn.execute(sa.text("SELECT count(*) FROM runs")).scalar() == 1
    engine.dispose()
    with open_store(db_url) as store:
        assert store.get_record(run_id)["id"] == run_id


def _run_processes(target: Callable[..., None], url: str, workers: int = 4) -> None:
    """Run ``target(url, worker, barrier, errors)`` in spawned processes; fail on any error."""
    ctx = multiprocessing.get_context("spawn")
    barrier, errors = ctx.Barrier(workers), ctx.Queue()
    procs = [ctx.Process(target=target, args=(url, w, barrier, errors)) for w in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    failures = []
    while not errors.empty():
        failures.append(errors.get(timeout=5))
    assert not failures, "\n".join(failures)
    assert [p.exitcode for p in procs] == [0] * workers


def test_concurrent_first_open_creates_schema_once(db_url: str) -> None:
    _run_processes(_workers.concurrent_opener, db_url)
    with open_store(db_url) as store:
        assert len(store.list_runs()) == 4


def test_concurrent_writer_processes(db_url: str) -> None:
    workers = 4
    open_store(db_url).close()  # schema created up front; each worker reopens
    _run_processes(_workers.concurrent_writer, db_url, workers)

    with open_store(db_url) as store:
        runs = store.list_runs(limit=0)
        assert len(runs) == workers * _workers.RUNS_PER_WORKER
        assert all(r["status"] == "completed" for r in runs)
        per_run = _workers.BATCHES_PER_RUN * _workers.SAMPLES_PER_BATCH
        for r in runs:
            assert len(store.samples(r["id"])) == per_run
            rec = store.get_record(r["id"])
            assert len(set(rec) - CORE_KEYS) == _workers.BATCHES_PER_RUN


def test_partial_energy_keeps_how_each_device_was_measured(store: Store) -> None:
    run_id = _new_run(store, pid=_dead_pid())
    store.update_extra(
        run_id,
        {
            "measured_devices": {
                "gpu0": {"method": "counter", "uncertainty_rel": 0.05, "name": "H100"},
                "cpu0": {"method": "estimated", "uncertainty_rel": 0.5, "name": "CPU model"},
            }
        },
    )
    store.add_samples(
        run_id,
        [Sample("gpu0", "gpu", 100.0 + i, 100.0) for i in range(3)]
        + [Sample("cpu0", "cpu", 100.0 + i, 10.0) for i in range(3)],
    )
    energy = store.get_record(run_id)["energy"]
    gpu0 = energy["components"]["gpu"]["devices"]["gpu0"]
    cpu0 = energy["components"]["cpu"]["devices"]["cpu0"]
    assert (gpu0["method"], gpu0["uncertainty_rel"], gpu0["name"]) == (
        "power-integrated",
        0.10,
        "H100",
    )
    assert (cpu0["method"], cpu0["uncertainty_rel"]) == ("estimated", 0.5)
    assert energy["method"] == "estimated"


def test_advisor_state_round_trips_and_survives_reopen(db_url: str) -> None:
    with open_store(db_url) as store:
        assert store.get_state("bso", "job-a") is None
        store.put_state("bso", "job-a", {"observations": [[32, 1.5]], "best": 1.5})
        store.put_state("bso", "job-b", {"observations": []})
        store.put_state("bso", "job-a", {"observations": [[32, 1.5], [64, 1.2]], "best": 1.2})
    with open_store(db_url) as store:
        assert store.get_state("bso", "job-a") == {
            "observations": [[32, 1.5], [64, 1.2]],
            "best": 1.2,
        }
        assert store.get_state("bso", "job-b") == {"observations": []}
        assert store.get_state("other", "job-a") is None
