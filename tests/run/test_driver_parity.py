"""``greenml run`` and ``greenml.Run`` give equal records for the same work and settings.

The same script runs under both drivers with the same tags and accounting
settings; the records have the same block set, the same FLOPs block (from the
``flops=`` and ``samples=`` tags, issue 28), the same carbon settings and the
same CPU scope default. Ids, times and measured values differ, nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import greenml
from greenml.measure.events import ENV_VAR
from greenml.run.session import DEFAULT_CPU_SCOPE
from greenml.store import open_store

SCRIPT = "import time\nsum(i * i for i in range(200_000))\ntime.sleep(0.2)\n"
TAGS = {"flops": "1e15", "samples": "1000", "team": "a"}
MEASURED = {"energy_j", "kg", "usd", "duration_s", "flops_per_j", "flops_per_s", "kwh",
            "it_energy_kwh", "facility_energy_kwh", "j_per_sample", "samples_per_kwh",
            "l", "litres", "liters", "g", "grams", "co2_kg",
            "uncertainty_rel"}  # follows the measured energy's  # fmt: skip


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", ENV_VAR, "GREENML_ZONE", "GREENML_CI", "GREENML_PUE",
                "GREENML_PRICE", "GREENML_SAMPLE_HZ", "GREENML_SERVER"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))


def _settings(block: Any) -> Any:
    """A block without its measured values (what the settings and methods decide)."""
    if isinstance(block, dict):
        return {k: _settings(v) for k, v in block.items() if k not in MEASURED}
    if isinstance(block, float):
        return float(f"{block:.9g}")  # a rate derived from two measured figures
    return block


def test_both_drivers_measure_the_process_by_default() -> None:
    import inspect

    default = inspect.signature(greenml.Run).parameters["cpu_scope"].default
    assert default == DEFAULT_CPU_SCOPE == "process"


def test_greenml_run_and_greenml_Run_give_equal_records(tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    db = str(tmp_path / "r.db")
    argv = ["run", "-q", "--db", db, "--ci", "400", "--pue", "1.5", "--price", "0.2",
            "--gpus", "", "--no-hostname", "--json-out", str(tmp_path / "cli.json")]  # fmt: skip
    for key, value in TAGS.items():
        argv += ["--tag", f"{key}={value}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "greenml", *argv, "--", sys.executable, str(script)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    with greenml.Run(tags=TAGS, db=db, ci=400, pue=1.5, price=0.2, gpus=[],
                     include_hostname=False) as run:  # fmt: skip
        exec(compile(SCRIPT, str(script), "exec"), {})
    assert run.record is not None
    with open_store(db) as store:
        ids = [r["id"] for r in store.list_runs(limit=2)]
        records = [store.get_run_record(i, exact=True).to_dict() for i in ids]
    cli_record = next(r for r in records if r["id"] != run.record.id)
    py_record = run.record.to_dict()
    blocks = {"carbon", "cost", "flops", "energy", "progress", "budget", "job", "water",
              "embodied", "carbon_market"}  # fmt: skip
    assert {k for k in cli_record if k in blocks and cli_record[k] is not None} == {
        k for k in py_record if k in blocks and py_record[k] is not None
    }
    assert cli_record["flops"] is not None
    assert _settings(cli_record["flops"]) == _settings(py_record["flops"])
    for block in ("carbon", "cost"):
        assert _settings(cli_record[block]) == _settings(py_record[block]), block
    assert cli_record["tags"] == py_record["tags"]
    assert {c for c in cli_record["energy"]["components"]} == {
        c for c in py_record["energy"]["components"]
    }
