"""Where the user is: arguments > environment > config file; most specific setting wins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from greenml.accounting.intensity import IntensitySource
from greenml.accounting.location import default_config_path, resolve_intensity_source
from greenml.accounting.static import cloud_region_source, country_source, zone_source
from greenml.errors import ConfigError

TRACE = "time,g_per_kwh\n2024-01-01T00:00:00,123\n2024-01-01T01:00:00,124\n"
T0 = 1704067200.0  # 2024-01-01 00:00 UTC, the trace's first hour


def g(source: IntensitySource | None) -> float:
    """The intensity at T0 (constants hold for all time)."""
    assert source is not None
    return float(source.intensity(T0, T0 + 60.0).series.values[0])


def config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture
def no_config(tmp_path: Path) -> Path:
    return config(tmp_path, "# nothing here\n")


def test_no_location_anywhere_gives_none_and_a_hint(no_config: Path) -> None:
    source, hint = resolve_intensity_source(env={}, config_path=no_config)
    assert source is None
    assert hint.startswith("carbon unknown: no location set")
    for way in ("--zone", "--region", "--country", "--ci", "GREENML_ZONE", "GREENML_CI"):
        assert way in hint
    assert str(no_config) in hint and "[location]" in hint


def test_default_config_file_is_the_per_user_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert default_config_path() == tmp_path / "greenml" / "config.toml"
    source, hint = resolve_intensity_source(env={})  # the file does not exist: not an error
    assert source is None and str(tmp_path / "greenml" / "config.toml") in hint
    (tmp_path / "greenml").mkdir()
    (tmp_path / "greenml" / "config.toml").write_text('[location]\ncountry = "FR"\n')
    source, how = resolve_intensity_source(env={})
    assert g(source) == g(country_source("FR")) and how.startswith("config file ")


def test_explicit_arguments(no_config: Path) -> None:
    source, how = resolve_intensity_source(zone="DE-LU", env={}, config_path=no_config)
    assert (g(source), how) == (g(zone_source("DE-LU")), "--zone DE-LU")
    source, how = resolve_intensity_source(region="aws:eu-west-1", config_path=no_config)
    assert (g(source), how) == (g(cloud_region_source("eu-west-1")), "--region aws:eu-west-1")


def test_environment(no_config: Path) -> None:
    source, how = resolve_intensity_source(env={"GREENML_COUNTRY": "FR"}, config_path=no_config)
    assert (g(source), how) == (g(country_source("FR")), "GREENML_COUNTRY=FR")
    source, how = resolve_intensity_source(env={"GREENML_CI": "123.5"}, config_path=no_config)
    assert g(source) == 123.5 and how == "GREENML_CI=123.5"
    # empty variables count as unset
    source, _ = resolve_intensity_source(env={"GREENML_ZONE": " "}, config_path=no_config)
    assert source is None


def test_config_file(tmp_path: Path) -> None:
    path = config(tmp_path, '[location]\nzone = "GB"\n')
    source, how = resolve_intensity_source(env={}, config_path=path)
    assert g(source) == g(zone_source("GB"))
    assert how == f"config file {path}: zone = 'GB'"


def test_config_trace_path_is_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "mine.csv").write_text(TRACE)
    path = config(tmp_path, '[location]\ntrace = "traces/mine.csv"\ncountry = "FR"\n')
    source, how = resolve_intensity_source(env={}, config_path=path)
    assert g(source) == 123.0
    assert "trace = 'traces/mine.csv'" in how and "ignored" in how and "country = 'FR'" in how


def test_arguments_beat_environment_beat_config(tmp_path: Path) -> None:
    path = config(tmp_path, '[location]\nzone = "GB"\n')
    env = {"GREENML_ZONE": "ZA"}
    source, how = resolve_intensity_source(country="FR", env=env, config_path=path)
    assert (g(source), how) == (g(country_source("FR")), "--country FR")
    source, how = resolve_intensity_source(env=env, config_path=path)
    assert (g(source), how) == (g(zone_source("ZA")), "GREENML_ZONE=ZA")
    # a whole layer wins: the environment's country beats the config file's zone
    source, how = resolve_intensity_source(env={"GREENML_COUNTRY": "FR"}, config_path=path)
    assert how == "GREENML_COUNTRY=FR"


def test_a_trace_may_name_its_zone_and_the_description_says_so(
    tmp_path: Path, no_config: Path
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE)
    source, how = resolve_intensity_source(zone="DE-LU", trace=trace, env={}, config_path=no_config)
    assert g(source) == 123.0
    assert how == f"--trace {trace} (most specific; ignored: --zone DE-LU)"


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"zone": "DE", "country": "FR"}, "--zone DE and --country FR"),
        ({"zone": "XX", "ci": 100.0}, "--ci 100 and --zone XX"),
        ({"country": "FR", "region": "us-central1"}, "--region us-central1 and --country FR"),
        ({"ci": 0.0, "trace": "t.csv"}, "--ci 0 and --trace t.csv"),
    ],
)
def test_conflicting_locations_are_an_error_not_a_silent_choice(
    no_config: Path, settings: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=f"conflicting location settings: {named}; give only one"):
        resolve_intensity_source(**settings, env={}, config_path=no_config)
    env = {"GREENML_CI": "50", "GREENML_ZONE": "GB"}  # the same rule for each layer
    with pytest.raises(ConfigError, match="GREENML_CI=50 and GREENML_ZONE=GB"):
        resolve_intensity_source(env=env, config_path=no_config)


def test_ci_is_a_user_figure(no_config: Path) -> None:
    source, how = resolve_intensity_source(ci=0.0, env={}, config_path=no_config)
    assert source is not None
    prov = source.intensity(0.0, 1.0).provenance
    assert prov.resolution == "user" and prov.source == "given by the user"
    assert g(source) == 0.0 and how == "--ci 0"


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"zone": "DE-LUX"}, r"^--zone DE-LUX: unknown grid zone 'DE-LUX'; closest known: DE-LU"),
        ({"country": "Frnace"}, r"closest known: France \(FR\)"),
        ({"region": "eu-west-7"}, r"closest known: aws:eu-west-1"),
        ({"env": {"GREENML_CI": "lots"}}, r"^GREENML_CI=lots: 'lots' is not a number"),
        ({"ci": 99999.0}, r"must be 0–5000"),
    ],
)
def test_bad_settings_say_where_they_came_from(
    no_config: Path, kwargs: dict[str, object], expected: str
) -> None:
    kwargs.setdefault("env", {})
    with pytest.raises(ConfigError, match=expected):
        resolve_intensity_source(config_path=no_config, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[location\n", "config file .*config.toml: "),
        ('[location]\ncontry = "FR"\n', "unknown \\[location\\] key\\(s\\) contry"),
        ('[location]\nci = "low"\n', "ci must be a number"),
        ("[location]\nzone = 7\n", "zone must be a string"),
        ('location = "FR"\n', "must be a table"),
    ],
)
def test_bad_config_files(tmp_path: Path, body: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        resolve_intensity_source(env={}, config_path=config(tmp_path, body))


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        resolve_intensity_source(env={}, config_path=tmp_path / "nope.toml")


def test_a_live_provider_answers_for_the_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from greenml.accounting.live import (
        ElectricityMapsSource,
        UkCarbonIntensitySource,
        WattTimeSource,
    )

    monkeypatch.setenv("GREENML_ELECTRICITYMAPS_TOKEN", "t0k3n")
    monkeypatch.setenv("GREENML_WATTTIME_USERNAME", "user")
    monkeypatch.setenv("GREENML_WATTTIME_PASSWORD", "secret")
    source, how = resolve_intensity_source(
        zone="DE", provider="electricitymaps", env={}, config_path=_no_config(tmp_path)
    )
    assert isinstance(source, ElectricityMapsSource)
    assert how == "--zone DE via electricitymaps"
    source, _ = resolve_intensity_source(
        zone="CAISO_NORTH", env={"GREENML_INTENSITY_PROVIDER": "watttime"},
        config_path=_no_config(tmp_path),
    )  # fmt: skip
    assert isinstance(source, WattTimeSource)
    config = tmp_path / "config.toml"
    config.write_text('[location]\nzone = "GB"\nprovider = "ukci"\n')
    source, how = resolve_intensity_source(env={}, config_path=config)
    assert isinstance(source, UkCarbonIntensitySource)
    assert how.endswith("via ukci")


def test_an_unknown_provider_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown intensity provider 'nope'"):
        resolve_intensity_source(
            zone="DE", provider="nope", env={}, config_path=_no_config(tmp_path)
        )


def _no_config(tmp_path: Path) -> Path:
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    return empty


def test_a_trace_falls_back_only_when_asked_and_says_so(tmp_path: Path, no_config: Path) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    later = T0 + 30 * 86400.0  # a month after the trace ends
    strict, how = resolve_intensity_source(
        trace=str(trace), zone="GB", env={}, config_path=no_config
    )
    assert "ignored: --zone GB" in how
    with pytest.raises(ConfigError, match=r"trace\.csv covers"):
        strict.intensity(later, later + 60)  # type: ignore[union-attr]
    lenient, how = resolve_intensity_source(
        trace=str(trace), zone="GB", fallback=True, env={}, config_path=no_config
    )
    assert lenient is not None
    assert "falls back to --zone GB" in how
    inside = lenient.intensity(T0, T0 + 60.0)
    assert inside.series.values[0] == 123.0  # the trace where it has data
    outside = lenient.intensity(later, later + 60)
    assert outside.series.values[0] == g(zone_source("GB"))
    assert "fallback" in outside.provenance.source
    with pytest.raises(ConfigError, match="needs a --zone, --region or --country"):
        resolve_intensity_source(trace=str(trace), fallback=True, env={}, config_path=no_config)
