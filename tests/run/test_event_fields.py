"""Every event field is escaped: text that is not UTF-8 never loses a run (issue 29, item 6).

A file name read from disk (``os.fsdecode(b"shard-\\xff.bin")``) carries a lone
surrogate; SQL drivers and JSON writers refuse it. Events escape every text
field, keys included, as command arguments already are (``\\xff``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import greenml
from greenml.measure import events
from greenml.measure.events import ENV_VAR, EventReader
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.store import open_store

NAME = os.fsdecode(b"shard-\xff.bin")


def fake() -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, 300.0)])])


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", ENV_VAR, "GREENML_ZONE", "GREENML_CI", "GREENML_PUE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))


def _utf8(value: object) -> bool:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "strict") is not None


def test_a_window_name_that_is_not_utf8_keeps_the_in_process_run(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    with greenml.Run(sensors=[fake()], db=db, tick_s=0.02) as run:
        meter = greenml.Meter(sensors=[fake()], sample_hz=0, publish_windows=True)
        with meter.window(NAME):
            time.sleep(0.01)
        meter.close()
        greenml.progress(1, 2, note=NAME)
        time.sleep(0.03)
    assert run.record is not None
    assert [w.name for w in run.record.windows] == ["run", "shard-\\xff.bin/rank0"]
    with open_store(db) as store:
        stored = store.get_run_record(run.record.id, exact=True)
    assert [w.name for w in stored.windows] == ["run", "shard-\\xff.bin/rank0"]


def test_a_window_name_that_is_not_utf8_is_escaped_in_the_events_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    monkeypatch.setenv(ENV_VAR, str(path))
    events.emit("window", name=NAME, components={NAME: [1.0, "counter", 0.05]})
    [event] = EventReader(path).read_new()
    assert event["name"] == "shard-\\xff.bin"
    assert list(event["components"]) == ["shard-\\xff.bin"]
    assert _utf8(event)


def test_events_written_by_another_writer_are_escaped_when_read(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"kind": "window", "name": "a\\udcffb", "x": {"\\ud800": ["\\udc80"]}}\n')
    [event] = EventReader(path).read_new()
    assert event["name"] == "a\\xffb"
    assert _utf8(event)


@given(st.recursive(
    st.text() | st.floats(allow_nan=False) | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
))
def test_every_event_field_is_utf8_after_escaping(value: object) -> None:
    seen: list[dict[str, object]] = []
    events.add_listener(seen.append)
    try:
        events.emit("custom", field=value, **{"surrogate": NAME})
    finally:
        events.remove_listener(seen.append)
    assert _utf8(seen[-1])
    assert seen[-1]["surrogate"] == "shard-\\xff.bin"
