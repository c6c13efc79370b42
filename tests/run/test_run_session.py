"""The one ``RunSession`` both drivers drive: its life and its ordered sinks.

``greenml run`` had Pushgateway, OTLP and ``--json-out``; ``greenml.Run`` had none of
them (issue 28). Both now hand the finished record to the same sinks, in order, and
a sink that fails costs neither the run nor the other sinks.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

import greenml
from greenml.accounting.run_accounting import AccountingOptions, prepare_accounting
from greenml.measure.events import ENV_VAR
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.run.budget import Budget
from greenml.run.run_session import RunSession, SessionSettings, static_rates
from greenml.run.sinks import Finished
from greenml.store import open_store
from tests.exporter.recording_server import recording_server

WATTS = 200.0


def fake() -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, WATTS)])])


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", ENV_VAR, "GREENML_ZONE", "GREENML_CI", "GREENML_PUE",
                "GREENML_SERVER"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.setenv("GREENML_LEDGER", str(tmp_path / "ledger.jsonl"))


class Keeping:
    """A sink that keeps what it got, in the order it got it."""

    def __init__(self, name: str, got: list[tuple[str, Finished]], fail: bool = False) -> None:
        self.name, self._got, self._fail = name, got, fail

    def deliver(self, finished: Finished) -> None:
        self._got.append((self.name, finished))
        if self._fail:
            raise RuntimeError("this sink is down")


def _session(tmp_path: Path, sinks: list[Any], **given: Any) -> RunSession:
    options = AccountingOptions(ci=400.0, price=0.2)
    settings = SessionSettings(name="s", command=["train"], tags={"team": "a"},
                               db_url=str(tmp_path / "r.db"), accounting=options,
                               sinks=sinks, **given)  # fmt: skip
    warned: list[str] = []
    return RunSession(settings, prepare_accounting(options), [],
                      lambda key, message: warned.append(message))  # fmt: skip


def test_a_session_runs_start_tick_end_finish_and_hands_the_record_to_its_sinks_in_order(
    tmp_path: Path,
) -> None:
    got: list[tuple[str, Finished]] = []
    session = _session(tmp_path, [Keeping("first", got, fail=True), Keeping("second", got)])
    session.start(Meter(sensors=[fake()], sample_hz=0))
    assert session.tick([{"kind": "progress", "t": session.started_at + 0.01, "step": 1,
                          "total": 4, "rank": 0}]) is None  # fmt: skip
    measurement = session.end()
    record = session.finish("completed", 0)
    assert record is not None and record.id == session.run_id
    # the failing first sink did not stop the second; both got the stored record in hand
    assert [name for name, _ in got] == ["first", "second"]
    assert all(f.record is record for _, f in got)
    assert got[1][1].data == record.to_dict()
    assert record.energy.total_j == pytest.approx(measurement.total_j)
    assert record.carbon is not None and record.carbon.kg == pytest.approx(
        measurement.total_kwh * 400 / 1000)
    with open_store(str(tmp_path / "r.db")) as store:  # what the sinks got is what is stored
        assert store.get_run_record(record.id, exact=True).to_dict() == record.to_dict()


def test_a_run_the_store_refused_still_reaches_the_sinks_as_an_unsaved_record(
    tmp_path: Path,
) -> None:
    got: list[tuple[str, Finished]] = []
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    session = _session(tmp_path, [Keeping("json", got)])
    session.settings.db_url = str(blocker / "sub" / "r.db")
    session.start(Meter(sensors=[fake()], sample_hz=0))
    session.end()
    assert session.finish("failed", 3) is None
    (_, finished), = got
    assert finished.record is None and finished.statement() is None
    data = finished.data
    assert data["saved"] is False and data["exit_code"] == 3 and data["status"] == "failed"
    assert data["store_error"] and data["id"] == session.run_id
    assert data["carbon"]["kg"] > 0 and data["tags"] == {"team": "a"}


def test_a_budget_verdict_is_returned_once_and_kept_in_the_budget_block(tmp_path: Path) -> None:
    session = _session(tmp_path, [], budget=Budget(limit=1e-9, unit="kWh", on_budget="warn"))
    session.start(Meter(sensors=[fake()], sample_hz=0))
    time.sleep(0.05)
    verdicts = [session.tick() for _ in range(3)]
    assert verdicts[0] is not None and verdicts[1:] == [None, None]
    session.end()
    record = session.finish("completed", 0)
    assert record is not None
    assert record.to_dict()["budget"]["passed"] is True


def test_the_rates_known_before_the_run() -> None:
    assert static_rates(None) == (None, None)
    assert static_rates(AccountingOptions(ci=400.0, pue="1.5", price=0.2)) == (
        pytest.approx(600.0), pytest.approx(0.3))
    assert static_rates(AccountingOptions(ci=400.0, pue="gcp")) == (None, None)  # a provider's


def test_greenml_Run_pushes_and_writes_json_out_as_greenml_run_does(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    with recording_server() as gateway:
        run = greenml.Run("pushed", sensors=[fake()], db=str(tmp_path / "r.db"),
                          push_gateway=gateway.url, json_out=out, ci=300)  # fmt: skip
        with run:
            pass
    assert run.record is not None
    written = json.loads(out.read_text())
    assert written["id"] == run.record.id and written["name"] == "pushed"
    (request,) = gateway.requests
    assert request.method == "PUT" and request.path.endswith(f"/run_id/{run.record.id}")
    assert b"greenml_run_energy_joules" in request.body


def test_greenml_Run_refuses_a_json_out_it_could_not_write_before_the_work(
    tmp_path: Path,
) -> None:
    from greenml.errors import ConfigError

    with pytest.raises(ConfigError):
        greenml.Run(sensors=[fake()], json_out=tmp_path / "missing-dir" / "r.json")
