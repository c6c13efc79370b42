"""Budgets: parsed from text, judged on the projection's lower bound, warn or SIGTERM."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import greenml
from greenml.errors import ConfigError
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.run import runner
from greenml.run.budget import Budget, check_budget, parse_budget
from greenml.run.projection import Interval, Projection
from greenml.store import open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")


def fake(watts: float = 300.0) -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, watts)])])


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", "GREENML_EVENTS", "GREENML_ZONE", "GREENML_CI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))


@pytest.mark.parametrize(
    ("text", "limit", "unit"),
    [("2kWh", 2, "kWh"), ("500 Wh", 0.5, "kWh"), ("1.5kg", 1.5, "kg"), ("300g", 0.3, "kg"),
     ("10usd", 10, "USD"), ("$10", 10, "USD"), ("1e-3MWh", 1, "kWh")],
)  # fmt: skip
def test_budget_syntax(text: str, limit: float, unit: str) -> None:
    budget = parse_budget(text)
    assert budget.limit == pytest.approx(limit) and budget.unit == unit


@given(st.text(max_size=20))
def test_any_text_is_a_budget_or_one_config_error(text: str) -> None:
    try:
        budget = parse_budget(text)
    except ConfigError as exc:
        assert "budget" in str(exc)
    else:
        assert budget.limit > 0 and budget.unit in ("kWh", "kg", "USD")


def projection(low_j: float | None, value_j: float) -> Projection:
    return Projection(step=1, total=10, fraction=0.1, elapsed_s=1, energy_j=1.0,
                      duration_s=Interval(10), total_energy_j=Interval(value_j, low_j, None),
                      eta_unix_s=0, increments_used=2, confidence=0.95)  # fmt: skip


def test_the_verdict_waits_for_the_lower_bound_not_the_central_value() -> None:
    budget = Budget(1.0, "kWh")
    kwargs = {"spent_j": 0.1 * 3.6e6, "g_per_kwh": None, "usd_per_kwh": None}
    assert check_budget(budget, projection=projection(0.9 * 3.6e6, 1.5 * 3.6e6), **kwargs) is None
    verdict = check_budget(budget, projection=projection(1.2 * 3.6e6, 1.5 * 3.6e6), **kwargs)
    assert verdict is not None and verdict.lower == pytest.approx(1.2)
    assert verdict.projected == pytest.approx(1.5) and "1.5 kWh" in verdict.message()


def test_a_carbon_budget_uses_the_effective_rate_and_waits_while_it_is_unknown() -> None:
    budget = Budget(1.0, "kg")
    spent = 3 * 3.6e6  # 3 kWh
    assert check_budget(budget, spent_j=spent, projection=None, g_per_kwh=None,
                        usd_per_kwh=None) is None  # fmt: skip
    verdict = check_budget(budget, spent_j=spent, projection=None, g_per_kwh=400.0,
                           usd_per_kwh=None)  # fmt: skip
    assert verdict is not None and verdict.lower == pytest.approx(1.2)


def test_run_warns_once_with_the_projected_total(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "greenml"), greenml.Run(
        sensors=[fake()], db=str(tmp_path / "r.db"), budget_kwh=3e-5, tick_s=0.02
    ) as run:
        for step in range(1, 11):
            time.sleep(0.03)
            run.progress(step, 100)
    warnings = [r.getMessage() for r in caplog.records if "budget" in r.getMessage()]
    assert len(warnings) == 1 and "projected total" in warnings[0]
    block = run.record.to_dict()["budget"] if run.record else {}
    assert block["passed"] is True and block["lower"] > 3e-5 and block["on_budget"] == "warn"


STOPPING = """
import signal, sys, time
sys.path.insert(0, {src!r})
import greenml
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
asked = []
if {handler}:
    signal.signal(signal.SIGTERM, lambda *a: asked.append(1))  # a checkpointer's guard
with greenml.Run("b", sensors=[FakeSensor([FakeDevice("gpu0", [(0, 300.0)])])], db={db!r},
                 budget_kwh=2e-5, on_budget="stop", tick_s=0.02) as run:
    for step in range(1, 500):
        if asked:
            print("checkpoint saved", flush=True)
            sys.exit(75)
        time.sleep(0.01)
        run.progress(step, 500)
"""


@pytest.mark.parametrize("handler", [True, False], ids=["checkpointer", "no-handler"])
def test_on_budget_stop_sends_sigterm_and_the_run_is_stored(tmp_path: Path, handler: bool) -> None:
    db = str(tmp_path / "r.db")
    script = STOPPING.format(src=SRC, handler=handler, db=db)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    if handler:  # the checkpointer saved and exited 75
        assert done.returncode == 75 and "checkpoint saved" in done.stdout, done.stderr
    else:  # died of SIGTERM, as without greenml
        assert done.returncode == -15, done.stderr
    assert "budget 2e-05 kWh will be passed" in done.stderr
    with open_store(db) as store:
        (row,) = store.list_runs()
        record = store.get_record(row["id"])
    assert record["status"] == "interrupted" and record["budget"]["passed"] is True


def test_greenml_run_budget_stops_the_command_with_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner, "discover_cpu_sensors", lambda *a, **k: ([fake()], []))
    script = textwrap.dedent("""
        import signal, sys, time
        asked = []
        signal.signal(signal.SIGTERM, lambda *a: asked.append(1))
        for _ in range(1000):
            if asked:
                sys.exit(75)
            time.sleep(0.01)
    """)
    options = runner.RunOptions(
        command=[sys.executable, "-c", script], db_url=str(tmp_path / "r.db"), gpus=[],
        budget=parse_budget("0.05Wh", "stop"), wait_for_store=True,
    )  # fmt: skip
    result = runner.run_measured(options)
    assert result.exit_code == 75 and result.record is not None
    record = result.record.to_dict()
    assert record["status"] == "interrupted" and record["budget"]["passed"] is True
    # stopped at the first tick (1 s) after 0.05 Wh = 180 J, long before its 10 s (3 kJ)
    assert 180 < result.measurement.total_j < 1500
    assert "stopping the command (SIGTERM)" in capsys.readouterr().err
    assert json.dumps(record)
