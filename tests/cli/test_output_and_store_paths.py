"""Low-severity defects of issue 29: store paths, closed or full stdout, CSV cells, clocks."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

import greenml
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.store import open_store
from greenml.store.csv_cells import csv_cell
from tests.helpers import SRC, greenml_cli


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "runs.db")
    done = greenml_cli("run", "-q", "--db", path, "--name", "=HYPERLINK(1)", "--tag",
                       "note=\t=cmd|' /C calc'!A0", "--json-out", str(tmp_path / "r.json"),
                       "--", "true")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("target", ["/dev/null", "/dev/zero", "FOLDER"])
def test_db_that_is_not_a_regular_file_is_refused(target: str, tmp_path: Path) -> None:
    path = str(tmp_path) if target == "FOLDER" else target
    for args in (["runs", "list", "--db", path], ["run", "--db", path, "--", "true"],
                 ["report", "--db", path, "abc"]):  # fmt: skip
        done = greenml_cli(*args)
        assert done.returncode == 2, (args, done.stdout)
        assert done.stderr.count("\n") == 1
        assert "not a database file" in done.stderr and "Traceback" not in done.stderr
    assert not Path(f"{path}-journal").exists()
    env = greenml_cli("runs", "list", GREENML_DB=path)
    assert env.returncode == 2 and "not a database file" in env.stderr


def _shell(command: str, db: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("greenml", path=str(Path(__import__("sys").executable).parent))
    script = f"set -o pipefail; {command.replace('greenml', str(exe))}"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "DB": db},
                          timeout=120, check=False)  # fmt: skip


@pytest.mark.parametrize("command", ["runs list", "runs list --json", "ledger verify",
                                     "runs export --all --format csv"])  # fmt: skip
def test_read_commands_to_a_closed_or_full_stdout(command: str, db: str) -> None:
    closed = _shell(f'greenml {command} --db "$DB" | head -0', db)
    assert closed.returncode == 141, closed.stderr  # as coreutils: killed by SIGPIPE
    assert closed.stderr == ""
    full = _shell(f'greenml {command} --db "$DB" > /dev/full', db)
    assert full.returncode == 1
    assert full.stderr == "greenml: error: cannot write: No space left on device\n"


def test_csv_export_neutralizes_formula_cells(db: str) -> None:
    done = greenml_cli("runs", "export", "--all", "--format", "csv", "--db", db)
    assert done.returncode == 0, done.stderr
    row = next(csv.DictReader(io.StringIO(done.stdout)))
    assert row["name"] == "'=HYPERLINK(1)"
    assert row["tags"].startswith("'") or "\t=" not in row["tags"][:2]
    for cell in ("=1+1", "+cmd", "-cmd", "@SUM(1)", "\t=1", "\r=1"):
        assert csv_cell(cell) == "'" + cell
    assert csv_cell("-1.5") == "-1.5" and csv_cell(-2) == -2 and csv_cell(None) == ""


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A store file and its folder that cannot be written (chattr +i as root, modes otherwise)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    done = greenml_cli("run", "-q", "--db", str(folder / "r.db"), "--json-out",
                       str(tmp_path / "r.json"), "--", "true")  # fmt: skip
    assert done.returncode == 0
    files = [*folder.iterdir(), folder]
    root = subprocess.run(["id", "-u"], capture_output=True, text=True).stdout.strip() == "0"
    if root:
        locked = subprocess.run(["chattr", "+i", *map(str, files)], capture_output=True)
        if locked.returncode != 0:
            pytest.skip(f"chattr +i not supported here: {locked.stderr!r}")
    else:
        for path in files:
            path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield folder / "r.db"
    finally:
        if root:
            subprocess.run(["chattr", "-i", *map(str, files)], check=False)
        for path in files:
            path.chmod(0o755 if path.is_dir() else 0o644)


def test_a_read_only_store_can_be_read(read_only: Path) -> None:
    listed = greenml_cli("runs", "list", "--json", "--db", str(read_only))
    assert listed.returncode == 0, listed.stderr
    run_id = listed.stdout.splitlines()[0].split('"id": "')[1][:12]
    for args in (["runs", "show", run_id], ["report", run_id], ["ledger", "verify"]):
        done = greenml_cli(*args, "--db", str(read_only))
        assert done.returncode == 0, (args, done.stderr)


def test_ended_at_never_before_started_at_when_the_clock_steps_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = time.time
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])
    with greenml.Run("clock", sensors=[sensor], db=str(tmp_path / "r.db"), ci=400) as run:
        time.sleep(0.2)
        monkeypatch.setattr(time, "time", lambda: real() - 3600.0)  # NTP steps back an hour
    monkeypatch.undo()
    assert run.record is not None
    with open_store(str(tmp_path / "r.db")) as store:
        stored = store.get_record(run.record.id)
    started = datetime.fromisoformat(stored["started_at"])
    ended = datetime.fromisoformat(stored["ended_at"])
    assert ended >= started
    assert (ended - started).total_seconds() == pytest.approx(stored["duration_s"], abs=0.01)
