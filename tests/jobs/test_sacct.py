"""Slurm's own energy accounting beside greenml's, through a fake ``sacct`` on PATH."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.jobs.sacct import parse_sacct, sacct_energy
from greenml.store import open_store
from tests.jobs.builders import node_run

SACCT_OUT = (
    "4242|gpu[0-1]|9000|00:01:40\n4242.batch|gpu0|1000|00:01:40\n4242.0|gpu[0-1]|8000|00:01:40\n"
)


def _fake_sacct(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str, code: int = 0) -> Path:
    """A ``sacct`` that logs its arguments and prints ``out`` (what Slurm prints)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (tmp_path / "sacct.out").write_text(out)
    exe = bin_dir / "sacct"
    exe.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/sacct.args\ncat {tmp_path}/sacct.out\n'
                   f"exit {code}\n")  # fmt: skip
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "sacct.args"


def _slurm_job(db_url: str) -> None:
    with open_store(db_url) as store:
        for rank in range(2):
            node_run(store, {"job_id": "4242", "source": "slurm", "step_id": "0",
                             "node": f"gpu{rank}", "node_rank": rank, "expected_nodes": 2},
                     gpu_j=[3000.0])  # fmt: skip


def test_jobs_show_compares_with_sacct(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    args = _fake_sacct(tmp_path, monkeypatch, SACCT_OUT)
    _slurm_job(db_url)
    assert main(["jobs", "show", "4242", "--db", db_url, "--json"]) == 0
    (second,) = json.loads(capsys.readouterr().out)["second_sources"]
    assert second["source"] == "slurm sacct ConsumedEnergyRaw" and second["status"] == "ok"
    assert second["energy_j"] == 8000.0 and second["greenml_energy_j"] == 6000.0
    assert second["difference_rel"] == pytest.approx(-0.25) and second["scope"] == "steps 0"
    assert args.read_text().split()[:2] == ["-j", "4242"]
    assert main(["jobs", "show", "4242", "--db", db_url]) == 0
    assert "slurm sacct ConsumedEnergyRaw: 8 kJ for steps 0" in capsys.readouterr().out


def test_no_energy_plugin_is_said(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    _fake_sacct(tmp_path, monkeypatch, "4242|gpu0||00:01:40\n4242.0|gpu0|0|00:01:40\n")
    _slurm_job(db_url)
    assert main(["jobs", "show", "4242", "--db", db_url, "--json"]) == 0
    (second,) = json.loads(capsys.readouterr().out)["second_sources"]
    assert second["status"] == "unavailable" and second["energy_j"] is None
    assert "acct_gather_energy plugin" in second["text"]


def test_a_failing_sacct_asked_for_is_an_error(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    _fake_sacct(tmp_path, monkeypatch, "", code=1)
    _slurm_job(db_url)
    assert main(["jobs", "show", "4242", "--db", db_url, "--sacct"]) == 2
    assert capsys.readouterr().err.startswith("greenml: error: sacct -j 4242 failed")
    assert main(["jobs", "show", "4242", "--db", db_url, "--json"]) == 0  # automatic: labelled
    (second,) = json.loads(capsys.readouterr().out)["second_sources"]
    assert second["status"] == "unavailable" and "failed" in second["text"]


def test_the_whole_allocation_when_no_step_is_known() -> None:
    rows = parse_sacct(SACCT_OUT)
    assert sacct_energy(rows, "4242", []) == 9000.0
    assert sacct_energy(rows, "4242", ["0"]) == 8000.0
    assert sacct_energy(rows, "4242", ["7"]) is None


@given(st.text(max_size=200))
def test_any_sacct_output_parses_or_is_a_config_error(text: str) -> None:
    try:
        rows = parse_sacct(text)
    except ConfigError:
        return
    assert all(r["energy_j"] is None or r["energy_j"] >= 0 for r in rows)


@given(st.lists(st.tuples(st.sampled_from(["7", "7.batch", "7.0", "8", "8.1"]),
                          st.one_of(st.none(), st.integers(0, 10**6)),
                          st.sampled_from(["COMPLETED", "CANCELLED by 0", "RUNNING", ""])),
                max_size=8))  # fmt: skip
def test_sacct_rows_by_raw_id_give_energy_and_state(
    rows: list[tuple[str, int | None, str]],
) -> None:
    from greenml.jobs.sacct import cancelled

    text = "".join(f"{j}|n0|{'' if e is None else e}|00:00:01|{s}\n" for j, e, s in rows)
    parsed = parse_sacct(text)
    assert [r["state"] for r in parsed] == [s for _, _, s in rows]
    whole = sacct_energy(parsed, "7", [])
    own = [e for j, e, _ in rows if j == "7" and e]
    steps = [e for j, e, _ in rows if j.startswith("7.") and e]
    assert whole == (sum(own) if own else (sum(steps) if steps else None))
    assert cancelled(parsed, ["7"]) == ["7"] * sum(
        1 for j, _, s in rows if j == "7" and s.startswith("CANCELLED"))  # fmt: skip
