"""Fuzz: what comes from outside as a record (a stored row's JSON, a spool file) is read
or refused with one error of greenml's tree, never another exception (Hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import GreenmlError
from greenml.record.run_record import RunRecord

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
KEYS = ["id", "name", "command", "tags", "started_at", "ended_at", "duration_s", "exit_code",
        "status", "energy", "environment", "windows", "carbon", "cost", "schema_version"]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), JSON, max_size=10))
def test_a_record_reads_lenient_and_round_trips_or_strict_refuses_with_a_greenml_error(
    data: dict[str, Any],
) -> None:
    try:
        record = RunRecord.from_dict(data)
    except GreenmlError:
        return
    assert record.to_dict() == data  # lenient reading never loses or changes a key
    json.dumps(record.to_dict())
    try:
        RunRecord.from_dict(data, strict=True)
    except GreenmlError as exc:
        assert str(exc)


@settings(max_examples=40, deadline=None)
@given(payload=st.dictionaries(
    st.sampled_from(["version", "run", "finish", "window", "samples", "extra"]), JSON, max_size=6))
def test_a_spooled_file_is_stored_or_quarantined_and_never_blocks_a_reader(
    payload: dict[str, Any],
) -> None:
    import os
    import tempfile
    from pathlib import Path

    from greenml.run import spool
    from greenml.store import open_store

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        db = str(folder / "runs.db")
        os.environ[spool.SPOOL_ENV] = str(folder / "spool")
        try:
            (folder / "spool").mkdir()
            text = json.dumps({**payload, "db_url": f"sqlite:///{db}"})  # as another writer left it
            (folder / "spool" / "fuzzed.json").write_text(text)
            with open_store(db) as store:
                spool.ingest_pending(store, db)  # never raises for a bad file
                assert not spool.has_pending(db)  # stored or moved aside
        finally:
            del os.environ[spool.SPOOL_ENV]
