"""A run exported from one store and imported into another, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from greenml.errors import AccessDenied, ConfigError, RecordTypeError, RunConflict
from greenml.measure.measurement import Sample
from greenml.store import access, open_store
from greenml.store.query import RunFilter, aggregate, find_runs, top_runs
from greenml.store.repository import Store
from greenml.store.transfer import export_run, import_run
from tests.store.conftest import make_measurement


def _local_run(tmp_path: Path, name: str = "train", tags: dict[str, str] | None = None) -> dict:
    with open_store(str(tmp_path / f"local-{name}.db")) as local:
        run_id = local.create_run(name=name, command=["python", "t.py"], tags=tags or {},
                                  started_at=1714564800.0, pid=1, hostname="h")  # fmt: skip
        local.add_samples(run_id, [
            Sample(f"gpu{d}", "gpu", 1714564800.0 + k, 100.0 + d, {"utilization": 0.5})
            for d in range(2) for k in range(4)
        ])  # fmt: skip
        window = make_measurement()
        local.add_window(run_id, window)
        local.update_extra(run_id, {"carbon": {"status": "ok", "kg": 0.25, "uncertainty_rel": 0.1}})
        local.finish_run(run_id, status="completed", exit_code=0, duration_s=3.0,
                         energy=window.to_dict(), ended_at=1714564803.0)  # fmt: skip
        return export_run(local, run_id, ledger_entry={"seq": 1}, user="alice")


def test_roundtrip_is_idempotent_and_complete(store: Store, tmp_path: Path) -> None:
    doc = _local_run(tmp_path, tags={"team": "<script>x</script>"})
    pid = access.ensure_project(store, "vision")
    assert import_run(store, doc, pid) is True
    assert import_run(store, doc, pid) is False  # the second upload stores nothing
    run_id = doc["record"]["id"]
    record = store.get_record(run_id)
    assert record["energy"] == doc["record"]["energy"]
    assert record["carbon"]["kg"] == 0.25
    assert len(store.samples(run_id)) == 8
    assert store.sample_columns(run_id)["power_w"].tolist().count(101.0) == 4
    assert [w["name"] for w in store.windows(run_id)] == ["train"]
    runs, cursor = find_runs(store, RunFilter(project_id=pid, tags={"team": "<script>x</script>"}))
    assert [r["id"] for r in runs] == [run_id] and cursor is None
    assert runs[0]["user"] == "alice" and runs[0]["co2_g"] == pytest.approx(250.0)
    week = aggregate(store, pid, "week")
    assert week[0]["period_start"] == "2024-04-29" and week[0]["runs"] == 1
    assert week[0]["energy_j"] == pytest.approx(1500.0)
    assert week[0]["measured_share"] == pytest.approx(1200.0 / 1500.0)
    assert aggregate(store, pid, "month")[0]["period_start"] == "2024-05-01"
    assert top_runs(store, pid)[0]["id"] == run_id
    other = access.ensure_project(store, "nlp")
    with pytest.raises(RunConflict):
        import_run(store, doc, other)
    assert find_runs(store, RunFilter(project_id=other))[0] == []


def test_bad_documents_write_nothing(store: Store, tmp_path: Path) -> None:
    doc = _local_run(tmp_path)
    pid = access.ensure_project(store, "p")
    broken = copy.deepcopy(doc)
    broken["samples"][1]["power_w"] = broken["samples"][1]["power_w"][:-1]  # after runs row
    with pytest.raises(ConfigError, match="power_w"):
        import_run(store, broken, pid)
    wrong_type = copy.deepcopy(doc)
    wrong_type["record"]["duration_s"] = "long"
    with pytest.raises(RecordTypeError):
        import_run(store, wrong_type, pid)
    assert store.list_runs(limit=0) == []


def test_cursor_pages_cover_every_run_once(store: Store, tmp_path: Path) -> None:
    pid = access.ensure_project(store, "p")
    doc = _local_run(tmp_path)
    for i in range(7):
        d = copy.deepcopy(doc)
        d["record"]["id"] = f"run{i:03d}"
        d["record"]["started_at"] = f"2024-05-0{1 if i < 4 else 2}T12:00:00+00:00"
        import_run(store, d, pid)
    seen, cursor = [], None
    while True:
        page, cursor = find_runs(store, RunFilter(project_id=pid), limit=3, cursor=cursor)
        seen += [r["id"] for r in page]
        if cursor is None:
            break
    assert sorted(seen) == [f"run{i:03d}" for i in range(7)] and len(seen) == 7
    assert seen[:3] == ["run004", "run005", "run006"]


def test_tokens_are_hashed_and_scoped(store: Store) -> None:
    secret = access.create_token(store, "vision", "write")
    grant = access.authenticate(store, secret)
    assert grant.project == "vision" and grant.allows("read") and not grant.allows("admin")
    with store.reading("t") as conn:
        stored = conn.exec_driver_sql("SELECT token_sha256, prefix FROM tokens").all()
    assert secret not in str(stored) and stored[0][0] == access.token_hash(secret)
    with pytest.raises(AccessDenied):
        access.authenticate(store, secret[:-1] + ("A" if secret[-1] != "A" else "B"))
    assert access.revoke_token(store, stored[0][1]) == 1
    with pytest.raises(AccessDenied, match="revoked"):
        access.authenticate(store, secret)
    with pytest.raises(ConfigError):
        access.create_token(store, "bad name!", "read")
