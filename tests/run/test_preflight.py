"""Bad input to ``greenml run`` is refused before the command starts: one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.run.preflight import check_run_inputs, storable_arg

PY = sys.executable


def greenml(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db"),
               "GREENML_SPOOL_DIR": str(tmp_path / "spool"), **env}  # fmt: skip
    return subprocess.run([PY, "-m", "greenml", *args], capture_output=True, text=True,
                          env=environ, timeout=60)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--name", "x" * 300], {}, "at most 255"),
        (["--db", "/proc/foo.db"], {}, "cannot create database /proc/foo.db"),
        (["--db", "{tmp}"], {}, "is a folder"),
        (["--json-out", "/proc/nope/run.json"], {}, "--json-out"),
        (["--json-out", "{tmp}/runs.db"], {}, "is the run store itself"),
        ([], {"GREENML_CPU_TDP_W": "nan"}, "GREENML_CPU_TDP_W='nan' must be"),
        ([], {"GREENML_CPU_TDP_W": "1e308"}, "GREENML_CPU_TDP_W='1e308' must be"),
        (["--sample-hz", "nan"], {}, "--sample-hz"),
        (["--sample-hz", "1e-300"], {}, "--sample-hz"),
    ],
)
def test_bad_input_stops_before_the_command_runs(
    tmp_path: Path, args: list[str], env: dict[str, str], message: str
) -> None:
    marker = tmp_path / "ran"
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    done = greenml(tmp_path, "run", "-q", *args, "--", PY, "-c",
                   f"open({str(marker)!r}, 'w').close()", **env)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not marker.exists()  # the command never started


def test_a_json_out_pointed_at_the_store_leaves_the_store_whole(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert greenml(tmp_path, "run", "-q", "--name", "first", "--", PY, "-c", "0").returncode == 0
    assert greenml(tmp_path, "runs", "list").returncode == 0  # stored by now
    before = db.read_bytes()
    done = greenml(tmp_path, "run", "-q", "--json-out", str(db), "--", PY, "-c", "0")
    assert done.returncode == 2
    assert db.read_bytes() == before


def test_a_command_argument_that_is_not_utf8_is_stored_escaped_and_passed_untouched(
    tmp_path: Path,
) -> None:
    out = tmp_path / "arg"
    script = (f"import sys; open({str(out)!r}, 'wb')"
              ".write(sys.argv[1].encode('utf-8', 'surrogateescape'))")  # fmt: skip
    arg = os.fsdecode(b"arg\xff")
    done = greenml(tmp_path, "run", "-q", "--", PY, "-c", script, arg)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == b"arg\xff"  # the command got its bytes
    listed = greenml(tmp_path, "runs", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert "arg\\\\xff" in listed.stdout  # the store holds a visible escape


@settings(max_examples=80, deadline=None)
@given(name=st.text(max_size=300), key=st.text(min_size=1, max_size=20), value=st.text(max_size=40))
def test_run_inputs_are_storable_or_one_config_error(name: str, key: str, value: str) -> None:
    """Fuzz: any name and tag is either accepted (and then UTF-8, NUL-free, short enough)
    or refused with a ConfigError, never another exception."""
    try:
        check_run_inputs(name=name, tags={key: value}, db_url="sqlite:///:memory:", json_out=None,
                         env={})  # fmt: skip
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert len(name) <= 255 and "\x00" not in name + key + value
    (name + key + value).encode("utf-8")


@given(st.binary(max_size=30))
def test_storable_arg_is_always_utf8(raw: bytes) -> None:
    stored = storable_arg(os.fsdecode(raw))
    stored.encode("utf-8")
    if b"\\" not in raw:
        assert stored.encode("utf-8", "backslashreplace") == stored.encode()
