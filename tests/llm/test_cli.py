"""``greenml llm`` on bad input: one line on stderr, exit 2; stats of an empty store."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.cli import main


def test_stats_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llm", "stats", "--db", str(tmp_path / "g.db"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["requests"] == 0 and doc["metered_j"] == 0 and doc["energy_j"]["p50"] is None


@settings(max_examples=30, deadline=None)
@given(since=st.text(min_size=1, max_size=20).filter(lambda s: s.strip() != ""))
def test_since_is_parsed_or_refused_in_one_line(since: str) -> None:
    db = Path(tempfile.mkdtemp()) / "g.db"
    assert main(["llm", "stats", "--db", str(db), "--since", since]) in (0, 2)


def test_bad_since_and_upstream(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llm", "stats", "--db", str(tmp_path / "g.db"), "--since", "soon"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--since" in err
    assert main(["llm", "proxy", "--upstream", "ftp://x"]) == 2
    assert "--upstream must be" in capsys.readouterr().err
