"""One validation for every settings source (issue 29, medium item).

``GREENML_CPU_TDP_W=nan|inf|1e308`` and ``GREENML_SAMPLE_HZ=nan|abc``, or
``sample_hz=1e-300`` given in Python or the config file, are refused by
``greenml.Run`` before the work starts, as ``greenml run`` refuses them; the
exporter's Meter never publishes NaN from a bad TDP.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import greenml
from greenml.cli import main
from greenml.config.settings import effective
from greenml.errors import ConfigError
from greenml.measure.events import ENV_VAR
from greenml.measure.sensors.cpu_model import resolve_cpu_tdp
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.quantities import bounds

BAD_TDP = ["nan", "inf", "-inf", "1e308", "0", "-5", "abc"]
BAD_HZ = ["nan", "inf", "abc", "1e-300", "0", "-1", "1000"]


def fake() -> FakeSensor:
    return FakeSensor([FakeDevice("gpu0", [(0, 100.0)])])


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GREENML_DB", ENV_VAR, "GREENML_ZONE", "GREENML_CI", "GREENML_PUE",
                "GREENML_CPU_TDP_W", "GREENML_SAMPLE_HZ"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))


def _run_refuses(tmp_path: Path, **kwargs: object) -> None:
    ran = []
    db = str(tmp_path / "r.db")
    with pytest.raises(ConfigError), greenml.Run(sensors=[fake()], db=db, **kwargs):  # type: ignore[arg-type]
        ran.append(True)
    assert ran == []  # refused before the work started


@pytest.mark.parametrize("text", BAD_TDP)
def test_a_bad_cpu_tdp_in_the_environment_is_refused_by_greenml_run(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_CPU_TDP_W", text)
    _run_refuses(tmp_path)


@pytest.mark.parametrize("text", BAD_TDP)
def test_a_bad_cpu_tdp_never_reaches_a_meter(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The exporter's and every other Meter's CPU model: no NaN watts to publish."""
    monkeypatch.setenv("GREENML_CPU_TDP_W", text)
    with pytest.raises(ConfigError, match="GREENML_CPU_TDP_W"):
        resolve_cpu_tdp(cpu_name="x")
    with pytest.raises(ConfigError):
        resolve_cpu_tdp(float(text) if text != "abc" else math.nan, cpu_name="x")


@pytest.mark.parametrize("text", BAD_HZ)
def test_a_bad_sample_rate_in_the_environment_is_refused_by_greenml_run(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GREENML_SAMPLE_HZ", text)
    _run_refuses(tmp_path)
    with pytest.raises(ConfigError, match="GREENML_SAMPLE_HZ"):
        effective()


@pytest.mark.parametrize("hz", [1e-300, math.nan, math.inf, -1.0, 1000.0])
def test_a_bad_sample_rate_given_in_python_is_refused(hz: float, tmp_path: Path) -> None:
    _run_refuses(tmp_path, sample_hz=hz)
    with pytest.raises(ConfigError):
        greenml.Meter(sensors=[fake()], sample_hz=hz)


def test_a_bad_sample_rate_in_the_config_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "greenml"
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text("[run]\nsample_hz = 1e-300\n")
    _run_refuses(tmp_path)


@pytest.mark.parametrize("text", ["nan", "1e-300", "abc"])
def test_a_bad_sample_rate_is_refused_by_greenml_run_from_option_and_environment(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "r.db")
    assert main(["run", "--db", db, "--sample-hz", text, "--", "true"]) == 2
    monkeypatch.setenv("GREENML_SAMPLE_HZ", text)
    assert main(["run", "--db", db, "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "GREENML_SAMPLE_HZ" in err and "Traceback" not in err
    assert not (tmp_path / "r.db").exists()


@given(st.one_of(st.floats(), st.text(max_size=12), st.integers()))
def test_the_one_sample_rate_check_accepts_only_rates_in_range(value: object) -> None:
    try:
        hz = bounds.sample_hz(value)
    except ConfigError:
        return
    assert 0.001 <= hz <= 100.0
