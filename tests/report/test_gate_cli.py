"""``greenml check`` in-process: store ids and JSON files mixed, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

import greenml.cli.app as app
from greenml.cli import main
from greenml.store import open_store
from tests.run_records import record


@pytest.fixture(autouse=True)
def check_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Register the command (the lead adds it to the registry) and keep the spool private."""
    monkeypatch.setitem(app.COMMANDS, "check", "greenml.cli.check:check")
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.delenv("GREENML_DB", raising=False)  # and HOME is the test's (tests/conftest.py)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A run store with baseline runs b1, b2 (100 J per 1000 samples) and a candidate c1 (104 J)."""
    path = str(tmp_path / "runs.db")
    with open_store(path) as store:
        for run_id, joules, tags in (
            ("b1b1b1b1b1b1", 100.0, {"samples": "1000"}),
            ("b2b2b2b2b2b2", 100.0, {"samples": "1000"}),
            ("c1c1c1c1c1c1", 104.0, {"samples": "1000"}),
            ("d1d1d1d1d1d1", 100.0, {"tokens": "1000"}),
        ):
            _store_run(store, run_id, joules, tags)
    return path


def _store_run(store: Any, run_id: str, joules: float, tags: dict[str, str]) -> None:
    now = time.time()
    store.create_run(name="bench", command=["python", "bench.py"], tags=tags, started_at=now - 60,
                     pid=os.getpid(), hostname="test-host", run_id=run_id)  # fmt: skip
    energy = record(joules, rel=0.01)["energy"]
    store.finish_run(run_id, status="completed", exit_code=0, duration_s=60.0, energy=energy,
                     ended_at=now)  # fmt: skip


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


def test_ids_and_files_mixed_fail(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tags = {"samples": "1000"}
    main_run = write(tmp_path, "main.json", record(100.0, rel=0.01, tags=tags))
    pr_1 = write(tmp_path, "pr-1.json", record(118.0, rel=0.01, tags=tags))
    pr_2 = write(tmp_path, "pr-2.json", record(120.0, rel=0.01, tags=tags))
    args = ["--db", db, "-b", "b1b1", "-b", main_run, "-c", pr_1, "-c", pr_2]
    code, out, err = check(capsys, *args, "--max-increase", "5%")
    assert code == 1, err
    assert out.startswith("greenml check: FAIL energy per 1000 samples +19.0 % ± 1.0 %")
    assert "(baseline 100 J, 2 runs; candidate 119 J, 2 runs)" in out
    assert out.endswith("> +5 % allowed beyond its uncertainty")
    assert err == ""


def test_pass_exit_zero(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--db", db, "-b", "b1b1", "-b", "b2b2", "-c", "c1c1", "--max-increase", "5"]
    code, out, _ = check(capsys, *args)
    assert code == 0
    assert out.startswith("greenml check: PASS energy per 1000 samples +4.0 %")


def test_within_noise_exit_three(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = check(capsys, "--db", db, "-b", "b1b1", "-c", "c1c1", "--max-increase", "3%")
    assert code == 3
    assert out.startswith("greenml check: INCONCLUSIVE ")
    assert "above +3 % allowed only within its uncertainty: about" in out


def test_exported_record_as_baseline(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exported = str(tmp_path / "main.json")
    assert main(["runs", "export", "b1b1", "--db", db, "-o", exported]) == 0
    code, out, _ = check(capsys, "--db", db, "-b", exported, "-c", "c1c1", "--json")
    assert code == 0
    verdict = json.loads(out)
    assert verdict["outcome"] == "pass"
    assert verdict["baseline_runs"] == ["b1b1b1b1b1b1"]
    assert verdict["increase_rel"] == pytest.approx(0.04)


def test_a_file_with_a_list_of_records(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tags = {"samples": "1000"}
    base = write(tmp_path, "base.json", [record(100.0, tags=tags), record(100.0, tags=tags)])
    cand = write(tmp_path, "cand.json", record(100.0, tags=tags))
    code, out, _ = check(capsys, "-b", base, "-c", cand)
    assert code == 0
    assert "2 runs; candidate" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-b", "b1b1", "-c", "d1d1"], "runs with different units of work"),
        (["-b", "ffff", "-c", "c1c1"], "no run matches 'ffff'"),
        (["-b", "b1b1", "-c", "c1c1", "--max-increase", "0.05"], "is ambiguous"),
        (["-b", "b1b1", "-c", "c1c1", "--max-increase", "five"], "write a percentage"),
        (["-b", "b1b1"], "Missing option"),
        (["-b", "b1b1", "-c", "b1b1"], "on both sides"),
    ],
)
def test_bad_input_exit_two(
    db: str, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = check(capsys, "--db", db, *args)
    assert code == (3 if "no run matches" in message else 2)  # not found is 3 (issue 28)
    assert out == ""
    assert err.startswith("greenml: error:") and message in err
    assert len(err.splitlines()) == 1


def test_unreadable_and_foreign_json_exit_two(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, err = check(capsys, "--db", db, "-b", str(broken), "-c", "c1c1")
    assert code == 2 and "is not valid JSON" in err
    foreign = write(tmp_path, "foreign.json", {"hello": "world"})
    code, _, err = check(capsys, "--db", db, "-b", foreign, "-c", "c1c1")
    assert code == 2 and "is not a greenml run record" in err
    code, _, err = check(capsys, "--db", db, "-b", str(tmp_path / "missing.json"), "-c", "c1c1")
    assert code == 2 and "cannot read" in err


def test_compare_total_is_an_option_and_the_line_says_what_was_compared(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def split(joules: float, static_j: float, run_id: str) -> dict[str, Any]:
        out = record(joules, rel=0.01, tags={"samples": "1000"}, run_id=run_id)
        out["energy"]["components"]["cpu"]["devices"]["cpu0"]["parts"] = {
            "dynamic": {"energy_j": joules - static_j, "label": "CPU-seconds"},
            "static": {"energy_j": static_j, "label": "idle floor"},
        }
        return out

    base = write(tmp_path, "base.json", split(25.0, 5.0, "aaaaaaaaaaaa"))
    cand = write(tmp_path, "cand.json", split(29.2, 9.0, "bbbbbbbbbbbb"))
    code, out, _ = check(capsys, "-b", base, "-c", cand)
    assert code == 0 and "dynamic part" in out
    code, out, _ = check(capsys, "-b", base, "-c", cand, "--compare", "total")
    assert code == 1 and "dynamic" not in out
    code, out, _ = check(capsys, "-b", base, "-c", cand, "--json")
    assert json.loads(out)["compared"] == "dynamic"
