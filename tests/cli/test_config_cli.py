"""``greenml config show | path`` and ``-v``: settings with their sources, the library's log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import greenml
from greenml.cli import main
from greenml.config.settings import effective
from greenml.errors import ConfigError
from greenml.measure.sensors.fake import FakeDevice, FakeSensor

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for var in ("GREENML_PUE", "GREENML_PRICE", "GREENML_DB", "GREENML_ZONE", "GREENML_LOG_TO",
                "GREENML_SAMPLE_HZ", "GREENML_EVENTS", "GREENML_SERVER",
                "GREENML_TOKEN"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    folder = tmp_path / "xdg" / "greenml"
    folder.mkdir(parents=True)
    return folder


def shown(capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, object]]:
    assert main(["config", "show", "--json"]) == 0
    return {row["name"]: row for row in json.loads(capsys.readouterr().out)}


def test_path_is_the_per_user_config_file(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(config_dir / "config.toml")


def test_environment_beats_file_beats_default(
    config_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "config.toml").write_text(
        '[location]\nzone = "FR"\n[run]\npue = 1.3\nprice = 0.25\nlog_to = ["mlflow"]\n'
    )
    monkeypatch.setenv("GREENML_PRICE", "0.4")
    rows = shown(capsys)
    assert rows["run.price"]["value"] == 0.4 and rows["run.price"]["source"] == (
        "environment (GREENML_PRICE)")  # fmt: skip
    pue = rows["run.pue"]
    assert pue["value"] == "1.3" and "config.toml [run]" in str(pue["source"])
    assert rows["location.zone"]["value"] == "FR" and rows["run.log_to"]["value"] == ["mlflow"]
    assert rows["run.sample_hz"] == {**rows["run.sample_hz"], "value": 1.0, "source": "default"}
    options = {e.setting.name: e for e in effective({"run.price": 0.1})}
    assert options["run.price"].value == 0.1 and options["run.price"].source == "option"


def test_the_server_and_its_token_show_and_the_token_is_masked(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "config.toml").write_text(
        '[server]\nurl = "https://greenml.example.org"\ntoken = "gml_abcdefsecret"\n'
    )
    rows = shown(capsys)
    assert rows["server.url"]["value"] == "https://greenml.example.org"
    assert rows["server.token"]["value"] == "gml_…(set)"
    assert main(["config", "show"]) == 0
    assert "abcdefsecret" not in capsys.readouterr().out


def test_a_bad_value_is_one_line_and_exit_2(
    config_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (config_dir / "config.toml").write_text('[run]\nprice = "cheap"\n')
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[run] price" in err


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=30))
def test_any_price_text_is_a_number_or_a_config_error(config_dir: Path, text: str) -> None:
    try:
        values = effective(env={"GREENML_PRICE": text})
    except ConfigError as exc:
        assert "GREENML_PRICE" in str(exc)
    else:
        price = next(e for e in values if e.setting.name == "run.price")
        assert price.value is None or isinstance(price.value, float)


def test_a_run_takes_its_price_and_pue_from_the_config_file(
    config_dir: Path, tmp_path: Path
) -> None:
    (config_dir / "config.toml").write_text("[run]\npue = 1.5\nprice = 0.2\n")
    sensor = FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])
    with greenml.Run(sensors=[sensor], db=str(tmp_path / "r.db")) as run:
        time.sleep(0.01)
    assert run.record is not None and run.record.cost is not None
    assert run.record.cost.usd == pytest.approx(run.record.energy.total_kwh * 1.5 * 0.2)


def test_verbose_shows_the_librarys_log(config_dir: Path, tmp_path: Path) -> None:
    def greenml_run(*flags: str) -> str:
        argv = [sys.executable, "-m", "greenml", *flags, "run", "-q", "--db",
                str(tmp_path / "r.db"), "--", "true"]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": SRC}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60,
                              check=True)  # fmt: skip
        return done.stderr

    assert "INFO greenml: greenml: measuring" in greenml_run("-v")
    assert "measuring" not in greenml_run()
