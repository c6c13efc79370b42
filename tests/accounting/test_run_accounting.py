"""The carbon and cost blocks of a run: computed, unknown or unavailable, never raised."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from greenml.accounting.intensity import ConstantSource, GridIntensity
from greenml.accounting.run_accounting import (
    Accounting,
    AccountingOptions,
    account_run,
    parse_pue,
    prepare_accounting,
)
from greenml.errors import ConfigError, GreenmlError
from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement

KWH = 3.6e6
START = datetime(2023, 6, 1, 12, tzinfo=timezone.utc)
T0 = START.timestamp()
NO_ENV: dict[str, str] = {}


def measurement(energy_j: float = KWH, duration_s: float = 3600.0) -> Measurement:
    gpu = ComponentEnergy({"gpu0": DeviceEnergy(energy_j, "counter", 0.05, "A100")})
    return Measurement("run", START, duration_s, {"gpu": gpu})


class BrokenApi:
    """An intensity source whose service fails."""

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        raise GreenmlError("Electricity Maps answered 503")


class ShortTrace:
    """An intensity source without data for the run."""

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        raise ConfigError("trace covers 2022-01-01 to 2022-12-31, not the run's 2023-06-01")


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    for var in ("GREENML_CI", "GREENML_ZONE", "GREENML_REGION", "GREENML_COUNTRY",
                "GREENML_INTENSITY_TRACE", "GREENML_PUE"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)


def test_ci_pue_and_price_give_both_blocks() -> None:
    options = AccountingOptions(ci=400.0, pue="1.1", price=0.2)
    timeline = {"gpu0": ([T0, T0 + 3600], [1000.0, 1000.0])}
    blocks = account_run(measurement(), timeline, options)
    carbon, cost = blocks["carbon"], blocks["cost"]
    assert carbon["kg"] == pytest.approx(1.1 * 0.4)
    assert carbon["status"] == "ok"
    assert carbon["method"] == "intensity given by the user × energy"
    assert cost["usd"] == pytest.approx(1.1 * 0.2)
    assert cost["basis"] == "electricity"


def test_no_location_is_unknown_with_a_hint_and_imports_nothing_heavy() -> None:
    accounting = prepare_accounting(None, env=NO_ENV)
    assert not accounting.active
    blocks = accounting.account(measurement())
    assert blocks["carbon"]["kg"] is None
    assert blocks["carbon"]["status"] == "unknown"
    assert "--zone" in blocks["carbon"]["hint"]
    assert blocks["cost"]["status"] == "unknown"


def test_a_location_from_the_environment_is_used_and_named() -> None:
    accounting = prepare_accounting(None, env={"GREENML_CI": "123", "GREENML_PUE": "aws"})
    carbon = accounting.account(measurement(), {})["carbon"]
    assert carbon["intensity_g_per_kwh"] == pytest.approx(123.0)
    assert carbon["pue"] == pytest.approx(1.135)
    assert carbon["location"] == "GREENML_CI=123"


def test_a_broken_config_file_leaves_carbon_unavailable(tmp_path: Path) -> None:
    config = tmp_path / "config" / "greenml" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[location]\nplanet = 'Mars'\n")
    carbon = prepare_accounting(None, env=NO_ENV).account(measurement(), {})["carbon"]
    assert carbon["status"] == "unavailable"
    assert "planet" in carbon["reason"]


def test_a_source_that_fails_gives_unavailable_with_the_reason() -> None:
    for source, reason in ((BrokenApi(), "503"), (ShortTrace(), "not the run's")):
        blocks = Accounting(source).account(measurement(), {})
        assert blocks["carbon"]["kg"] is None
        assert blocks["carbon"]["status"] == "unavailable"
        assert reason in blocks["carbon"]["reason"]


class HourlyTrace:
    """An hourly intensity source: 100 g/kWh in even hours, 300 in odd ones."""

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        from greenml.accounting.intensity import IntensityProvenance
        from greenml.accounting.series import StepSeries

        times = [T0 - 3600 + i * 3600 for i in range(6)]
        values = [100.0 if i % 2 else 300.0 for i in range(6)]
        prov = IntensityProvenance("test trace", "XX", "hourly", "average", "lifecycle")
        return GridIntensity(StepSeries.from_points(times, values, "g/kWh", 3600.0), prov)


def test_a_time_varying_intensity_is_recorded_for_the_run_span() -> None:
    carbon = Accounting(HourlyTrace()).account(measurement(duration_s=5400), {})["carbon"]
    assert carbon["intensity_series"] == [
        [T0, 100.0], [T0 + 3600, 300.0], [T0 + 5400, 300.0]
    ]  # fmt: skip
    constant = Accounting(ConstantSource.user(100.0)).account(measurement(), {})["carbon"]
    assert "intensity_series" not in constant


def test_no_pue_counts_no_overhead_and_says_so() -> None:
    blocks = Accounting(ConstantSource.user(100.0)).account(measurement(), {})
    assert blocks["carbon"]["pue"] == 1.0
    assert "not given" in blocks["carbon"]["pue_source"]
    assert blocks["carbon"]["kg"] == pytest.approx(0.1)


def test_pue_takes_a_number_or_a_provider() -> None:
    assert parse_pue("1.2") is not None and parse_pue("1.2").value == 1.2  # type: ignore[union-attr]
    aws = parse_pue("aws")
    assert aws is not None and aws.value == pytest.approx(1.135)
    assert parse_pue(None, {"GREENML_PUE": "1.3"}).value == 1.3  # type: ignore[union-attr]
    with pytest.raises(ConfigError, match="unknown provider"):
        parse_pue("martian")
    with pytest.raises(ConfigError):
        parse_pue("0.5")


def test_bad_options_are_refused_before_the_run() -> None:
    with pytest.raises(ConfigError, match="not both"):
        prepare_accounting(AccountingOptions(price=0.1, price_trace="x.csv"), env=NO_ENV)
    with pytest.raises(ConfigError, match="--spot needs"):
        prepare_accounting(AccountingOptions(spot=True), env=NO_ENV)
    with pytest.raises(ConfigError, match="no price for instance"):
        prepare_accounting(AccountingOptions(instance="nonesuch.big"), env=NO_ENV)


def test_instance_hours_are_the_cost_when_no_electricity_price_is_given() -> None:
    options = AccountingOptions(instance="g5.xlarge")
    blocks = prepare_accounting(options, env=NO_ENV).account(measurement(duration_s=1800), {})
    cost = blocks["cost"]
    assert cost["basis"] == "instance"
    assert cost["usd"] == pytest.approx(0.5 * 1.006)
    assert cost["instance"]["instance_type"] == "g5.xlarge"
    assert blocks["carbon"]["status"] == "unknown"


def test_instance_and_electricity_are_reported_side_by_side() -> None:
    options = AccountingOptions(instance="g5.xlarge", price=0.1, ci=100.0)
    blocks = prepare_accounting(options, env=NO_ENV).account(measurement(), {})
    assert blocks["cost"]["usd"] == pytest.approx(0.1)  # electricity
    assert blocks["cost"]["instance"]["usd"] == pytest.approx(1.006)


def test_a_price_trace_that_misses_the_run_leaves_cost_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text(
        "Datetime (UTC),Datetime (Local),Price (USD/MWh)\n"
        "2022-01-01 00:00:00+00:00,2022-01-01 01:00:00+01:00,50\n"
    )
    options = AccountingOptions(price_trace=str(path), ci=100.0)
    blocks = prepare_accounting(options, env=NO_ENV).account(measurement(), {})
    assert blocks["cost"]["status"] == "unavailable"
    assert "not the run's" in blocks["cost"]["reason"]
    assert blocks["carbon"]["status"] == "ok"


def test_importing_the_module_does_not_import_numpy() -> None:
    import subprocess

    code = (
        "import sys; import greenml.accounting.run_accounting as r; "
        "a = r.prepare_accounting(None, env={}); "
        "print('numpy' in sys.modules, a.active)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_market_water_and_embodied_blocks_beside_location_based() -> None:
    options = AccountingOptions(country="FR", pue="1.2", certificates=("50%@2023:GO",),
                                wue="0.5")  # fmt: skip
    blocks = account_run(measurement(), {"gpu0": ([T0, T0 + 3600], [1000.0, 1000.0])}, options)
    carbon, market = blocks["carbon"], blocks["carbon_market"]
    assert market["kg"] == pytest.approx(carbon["kg"] / 2)  # half covered, half location-based
    assert carbon["kg"] > market["kg"]  # the location-based figure is not touched
    water = blocks["water"]
    assert water["onsite_l"] == pytest.approx(0.5)  # 1 kWh IT × 0.5 L/kWh
    assert water["offsite_l"] == pytest.approx(1.2 * water["ewif_l_per_kwh"])
    embodied = blocks["embodied"]  # A100 for one hour: its cited figure and its host's share
    assert embodied["basis"] == "model" and embodied["kg"] > 0


def test_certificates_beyond_the_runs_energy_leave_market_unavailable() -> None:
    options = AccountingOptions(ci=300.0, certificates=("5kWh",))
    market = account_run(measurement(), {}, options)["carbon_market"]
    assert market["kg"] is None and market["status"] == "unavailable"
    assert "cover 5 kWh but the energy used is 1 kWh" in market["reason"]


def test_no_location_still_gives_water_on_site_and_embodied() -> None:
    blocks = prepare_accounting(None, env=NO_ENV).account(measurement())
    assert blocks["carbon_market"]["kg"] is None and blocks["carbon_market"]["status"] == "unknown"
    assert blocks["water"]["status"] == "partial" and blocks["water"]["offsite_l"] is None
    assert blocks["embodied"]["kg"] > 0


def test_bad_footprint_options_are_refused_before_the_run() -> None:
    for options, message in (
        (AccountingOptions(certificates=("140%",)), "cannot exceed 100"),
        (AccountingOptions(wue="-1"), "a WUE must be between"),
        (AccountingOptions(supplier_ci=float("nan")), "--supplier-ci"),
    ):
        with pytest.raises(ConfigError, match=message):
            prepare_accounting(options, env=NO_ENV)


def test_a_location_from_the_environment_places_water_and_cfe() -> None:
    accounting = prepare_accounting(None, env={"GREENML_REGION": "gcp:europe-west1"})
    blocks = accounting.account(measurement(), {})
    assert blocks["water"]["offsite_l"] is not None  # Belgium's grid water
    assert "Belgium" in blocks["water"]["offsite_source"]
    assert blocks["carbon_market"]["basis"] == "provider-cfe+location-fallback"
