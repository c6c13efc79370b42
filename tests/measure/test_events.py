"""The events channel: atomic appends from several processes, incremental reads."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from greenml.measure import events
from greenml.measure.events import ENV_VAR, EventReader, emit


def _writer(path: str, rank: int, count: int) -> None:
    os.environ[ENV_VAR] = path
    os.environ["RANK"] = str(rank)
    for i in range(count):
        emit("tick", i=i, pad="x" * (i % 300))


def test_concurrent_writers_leave_no_torn_lines(tmp_path: Path) -> None:
    path = str(tmp_path / "events.jsonl")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, r, 1000)) for r in range(4)]
    for p in procs:
        p.start()
    reader = EventReader(path)
    seen = []
    while any(p.is_alive() for p in procs):
        seen.extend(reader.read_new())  # reads while writers write: partial lines wait
    for p in procs:
        p.join()
        assert p.exitcode == 0
    seen.extend(reader.read_new())
    assert reader.bad_lines == 0
    assert len(seen) == 4000
    for rank in range(4):
        assert sorted(e["i"] for e in seen if e["rank"] == rank) == list(range(1000))
    lines = Path(path).read_bytes().split(b"\n")
    assert all(json.loads(line) for line in lines if line)


def test_emit_is_a_noop_without_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    emit("progress", step=1)  # nothing to check but that it returns


def test_emit_never_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing-dir" / "events.jsonl"))
    emit("progress", step=1)
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "e.jsonl"))
    emit("big", blob="y" * 10_000)  # too large: a small error event instead
    (event,) = EventReader(tmp_path / "e.jsonl").read_new()
    assert event["kind"] == "big" and "too large" in event["error"]


def test_rank_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("SLURM_PROCID", raising=False)
    assert events.current_rank() == 0
    monkeypatch.setenv("SLURM_PROCID", "5")
    assert events.current_rank() == 5
    monkeypatch.setenv("RANK", "3")
    assert events.current_rank() == 3


def test_reader_skips_garbage_and_waits_for_partial_lines(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"kind":"a"}\nnot json\n{"kind":"b"')
    reader = EventReader(path)
    assert [e["kind"] for e in reader.read_new()] == ["a"]
    assert reader.bad_lines == 1
    with path.open("ab") as f:
        f.write(b"}\n")
    assert [e["kind"] for e in reader.read_new()] == ["b"]
    assert reader.read_new() == []
