"""The suite never writes to the real HOME: every test gets its own HOME, XDG dirs, no GREENML_*."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import _REAL_HOME, home_snapshot


def test_suite_leaves_home_untouched(isolated_home: Path, tmp_path: Path) -> None:
    from greenml.store.url import resolve_url, sqlite_path

    assert Path(os.environ["HOME"]) == isolated_home != _REAL_HOME
    assert not [name for name in os.environ if name.startswith("GREENML_")]
    default = sqlite_path(resolve_url(None))
    assert default is not None and isolated_home in default.parents
    before = home_snapshot(_REAL_HOME)
    from greenml.cli import main

    # The gate without --db remembers its verdict in the default store: the test's own.
    record = tmp_path / "b.json"
    import json

    from tests.run_records import record as make

    record.write_text(json.dumps(make(100.0, rel=0.01)))
    other = tmp_path / "c.json"
    other.write_text(json.dumps({**make(100.0, rel=0.01), "id": "c" * 12}))
    main(["check", "-b", str(record), "-c", str(other)])
    assert home_snapshot(_REAL_HOME) == before


def test_home_snapshot_sees_a_change(tmp_path: Path) -> None:
    before = home_snapshot(tmp_path)
    (tmp_path / ".local" / "share" / "greenml").mkdir(parents=True)
    (tmp_path / ".local" / "share" / "greenml" / "greenml.db").write_bytes(b"x")
    assert home_snapshot(tmp_path) != before
