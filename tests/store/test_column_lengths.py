"""Every length of the schema is checked before a write, alike on SQLite and PostgreSQL.

A tag key or window name over 255 characters made PostgreSQL refuse the run at its
end (quarantined, exit 0) while SQLite kept it: now both refuse it, with one line,
before anything is written, and ``greenml run`` refuses it before the command starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import String

from greenml.errors import RecordValueError, WindowError
from greenml.store.repository import Store
from greenml.store.schema import metadata
from greenml.store.values import RUN_TEXT_CHARS, limits
from tests.store.conftest import make_measurement

LONG = "k" * 300
SRC = Path(__file__).resolve().parents[2] / "src"


def test_every_string_column_has_its_limit_and_the_run_texts_match_the_schema() -> None:
    columns = [(t.name, c.name) for t in metadata.tables.values() for c in t.columns
               if isinstance(c.type, String) and c.type.length]  # fmt: skip
    assert set(limits()) == set(columns)
    for where in (("runs", "name"), ("run_tags", "key"), ("windows", "name"), ("runs", "hostname")):
        assert limits()[where] == RUN_TEXT_CHARS


def test_a_tag_key_or_window_name_over_255_is_refused_alike_on_postgresql_and_sqlite(
    store: Store,
) -> None:
    with pytest.raises(RecordValueError, match="tag key is 300 characters"):
        store.create_run(name="n", command=["x"], tags={LONG: "v"}, started_at=1.7e9, pid=1,
                         hostname="h")  # fmt: skip
    with pytest.raises(RecordValueError, match="run name"):
        store.create_run(name=LONG, command=["x"], tags={}, started_at=1.7e9, pid=1,
                         hostname="h")  # fmt: skip
    with pytest.raises(RecordValueError, match="NUL"):
        store.create_run(name="n", command=["x"], tags={"k": "a\x00"}, started_at=1.7e9, pid=1,
                         hostname="h")  # fmt: skip
    assert store.list_runs(limit=10) == []  # nothing was written
    run_id = store.create_run(name="n", command=["x"], tags={"k" * 255: "v"}, started_at=1.7e9,
                              pid=1, hostname="h")  # fmt: skip
    with pytest.raises(RecordValueError, match="window name"):
        store.add_window(run_id, make_measurement(name=LONG))
    store.add_window(run_id, make_measurement(name="w" * 255))  # the longest that fits
    assert [w["name"] for w in store.windows(run_id)] == ["w" * 255]


def test_a_published_window_name_over_255_is_refused_when_the_window_opens() -> None:
    from greenml.measure.meter import Meter

    meter = Meter(sensors=[], publish_windows=True)
    with pytest.raises(WindowError, match="cannot be stored"), meter.window(LONG):
        pass
    with meter.window("w" * 255):
        pass


@pytest.mark.parametrize("option", [["--tag", f"{LONG}=v"], ["--name", LONG]])
def test_greenml_run_refuses_an_overlong_tag_or_name_before_the_command_starts(
    db_url: str, tmp_path: Path, option: list[str]
) -> None:
    marker = tmp_path / "ran"
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-m", "greenml", "run", "--db", db_url, *option, "--", sys.executable,
         "-c", f"open({str(marker)!r}, 'w').close()"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "300 characters" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()  # the command never ran
    with Store(db_url) as store:
        assert store.list_runs(limit=10) == []
