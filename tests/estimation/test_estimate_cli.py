"""``greenml estimate`` in-process: the table, --json, location options and errors."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import greenml.cli.app as app
from greenml.accounting import location
from greenml.cli import main
from greenml.cli.estimate import estimate


@pytest.fixture(autouse=True)
def no_user_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No GREENML_* variables and no per-user config file leak into the tests."""
    for var in location.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(location, "default_config_path", lambda: tmp_path / "none.toml")


def run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(estimate, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_device_hours_table_shows_every_figure() -> None:
    args = ["--gpu", "H100", "--count", "8", "--hours", "100", "--utilization", "0.8"]
    result = CliRunner().invoke(estimate, [*args, "--pue", "1.1", "--ci", "300", "--price", "0.12"])
    assert result.exit_code == 0, result.output
    out = result.output
    for text in (
        "H100 SXM",
        "energy (IT)",
        "448 kWh",
        "energy (facility)",
        "492.8 kWh",
        "CO2eq",
        "147.8 kg",
        "$59.14",
        "device-hours",
        "800",
        "passenger car-years",
        "smartphone charges",
        "US household-years",
        "formula:",
        "device-hours = 8 × 100 h = 800 h",
        "IT energy = 800 h × 560 W = 448 kWh",
        "CO2eq = 492.8 kWh × 300 g/kWh = 147.8 kg",
        "assumptions",
        "TDP 700 W (gpus.csv) × utilization 0.8",
    ):
        assert text in out, text


def test_gpt3_compute_mode_as_json() -> None:
    data = run("--flops", "3.14e23", "--gpu", "V100S", "--precision", "fp16")
    assert data["device_hours"] == pytest.approx(670_940, rel=0.005)
    assert data["energy_mwh"] == pytest.approx(167.7, rel=0.005)
    assert data["co2_t"] is None and data["cost_usd"] is None
    for key in ("energy_mwh", "co2_t", "cost_usd", "device_hours", "assumptions", "formula"):
        assert key in data


def test_model_and_data_mode_with_mfu_and_trials() -> None:
    base = ["--params", "70e9", "--tokens", "15e12", "--gpu", "H100", "--count", "1024"]
    one = run(*base, "--mfu", "0.4", "--ci", "400")
    three = run(*base, "--mfu", "0.4", "--ci", "400", "--trials", "3")
    flops = 6 * 70e9 * 15e12
    assert one["device_hours"] == pytest.approx(flops / (989.5e12 * 0.4) / 3600)
    assert three["co2_t"] == pytest.approx(3 * float(one["co2_t"]))  # type: ignore[arg-type]


def test_power_w_and_provider_pue() -> None:
    data = run("--gpu", "V100", "--count", "10000", "--hours", "355.2", "--power-w", "330",
               "--pue", "1.10", "--ci", "429")  # fmt: skip
    assert data["energy_mwh"] == pytest.approx(1287, rel=0.005)
    assert data["co2_t"] == pytest.approx(552, rel=0.005)
    gcp = run("--gpu", "T4", "--hours", "10", "--pue", "gcp")
    assert gcp["pue"] == 1.10


def test_zone_is_resolved_by_the_location_settings() -> None:
    data = run("--gpu", "A100", "--hours", "10", "--zone", "DE")
    assert data["co2_t"] is not None
    assert data["intensity_g_per_kwh"] and "--zone DE" in str(data["intensity_source"])


def test_carbon_unknown_is_said_with_how_to_fix_it() -> None:
    result = CliRunner().invoke(estimate, ["--gpu", "L4", "--hours", "5"])
    assert result.exit_code == 0, result.output
    assert "unknown" in result.output
    assert "note: carbon unknown" in result.output and "--zone" in result.output


@pytest.fixture
def greenml_with_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    """``greenml.cli.main`` with the command registered on a local group."""

    @click.group()
    def local() -> None:
        """Test group."""

    local.add_command(estimate)
    monkeypatch.setattr(app, "cli", local)


@pytest.mark.usefixtures("greenml_with_estimate")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "H1000", "--hours", "1"], "unknown GPU 'H1000'; closest: H100 SXM"),
        (["--gpu", "H100", "--hours", "1", "--flops", "1e20"], "got hours and flops"),
        (["--gpu", "H100", "--hours", "-1"], "hours must be a positive number"),
        (["--gpu", "H100", "--flops", "1e20", "--mfu", "1.5"], r"mfu must be in (0, 1]"),
        (["--gpu", "T4", "--flops", "1e20", "--precision", "bf16"], "T4 has no bf16"),
        (["--gpu", "TPU v5e", "--hours", "1"], "give power_w"),
        (["--gpu", "H100", "--hours", "1", "--zone", "NOWHERE"], "--zone NOWHERE"),
    ],
)
def test_errors_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("greenml: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.usefixtures("greenml_with_estimate")
def test_main_runs_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--gpu", "A10G", "--hours", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu"] == "A10G" and data["energy_kwh"] == pytest.approx(0.6)


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, 1e308, 1e-300, 5e15]),
).map(repr)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(hours=NUMBERS, utilization=NUMBERS, count=st.integers(-2, 10**6).map(str))
def test_fuzzed_numbers_give_valid_json_or_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], hours: str, utilization: str, count: str
) -> None:
    code = main(["estimate", "--gpu", "H100", "--hours", hours, "--utilization", utilization,
                 "--count", count, "--ci", "300", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    if code == 0:
        data = _strict_json(out)
        assert isinstance(data, dict)
    else:
        assert code == 2 and err.count("\n") == 1 and err.startswith("greenml: error:"), err


def test_json_gains_market_water_and_embodied() -> None:
    data = run("--gpu", "A100", "--count", "8", "--hours", "10", "--region", "us-central1",
               "--pue", "gcp", "--wue", "aws")  # fmt: skip
    for key in ("co2_t", "co2_market_t", "water_l", "embodied_co2_t"):
        assert isinstance(data[key], float), key
    assert data["co2_market_t"] < data["co2_t"]  # type: ignore[operator]  # Google's CFE share
    market = data["carbon_market"]
    assert isinstance(market, dict) and market["basis"] == "provider-cfe+location-fallback"
    water = data["water"]
    assert isinstance(water, dict) and water["wue_l_per_kwh"] == 0.18


def test_market_declarations_in_estimate() -> None:
    data = run("--gpu", "H100", "--hours", "10", "--country", "FR",
               "--certificates", "100%@2025:GO")  # fmt: skip
    assert data["co2_market_t"] == 0.0 and data["co2_t"] > 0  # type: ignore[operator]


@pytest.mark.usefixtures("greenml_with_estimate")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--certificates", "50000kWh", "--country", "FR"], "certificates cover 50000 kWh"),
        (["--certificates", "120%"], "cannot exceed 100 %"),
        (["--certificates", "-3%"], "≥ 0"),
        (["--supplier-ci", "-1"], "--supplier-ci must be between"),
        (["--wue", "55"], "a WUE must be between"),
        (["--zone", "FR"], "--country FR gives France's country-level yearly mean"),
    ],
)
def test_bad_footprint_input_one_line_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", "--gpu", "H100", "--hours", "1", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("greenml: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.usefixtures("greenml_with_estimate")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    certificates=st.lists(
        st.one_of(st.text(max_size=14), st.from_regex(r"-?[0-9]{1,4}(\.[0-9])?(%|kWh|MWh)?"
                                                      r"(@[0-9]{2,5})?(:GO)?", fullmatch=True)),
        max_size=3,
    ),
    wue=st.none() | NUMBERS | st.sampled_from(["aws", "azure", "gcp", ""]),
    supplier=st.none() | NUMBERS,
)  # fmt: skip
def test_fuzzed_footprint_options_give_valid_json_or_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], certificates: list[str], wue: str | None,
    supplier: str | None,
) -> None:  # fmt: skip
    args = ["estimate", "--gpu", "H100", "--hours", "2", "--country", "FR", "--json"]
    for text in certificates:
        args += ["--certificates", text]
    if wue is not None:
        args += ["--wue", wue]
    if supplier is not None:
        args += ["--supplier-ci", supplier]
    code = main(args)
    out, err = capsys.readouterr()
    if code == 0:
        data = _strict_json(out)
        assert isinstance(data, dict) and data["co2_market_t"] is not None
        assert data["co2_market_t"] >= 0 and data["water_l"] >= 0
    else:
        assert code == 2 and err.count("\n") == 1 and err.startswith("greenml: error:"), err


def test_embodied_figure_and_lifetime_given() -> None:
    data = run("--gpu", "H100", "--hours", "1000", "--embodied-kg", "2000",
               "--lifetime-years", "5")  # fmt: skip
    assert data["embodied_co2_t"] == pytest.approx(2000 * 1000 / (5 * 8760) / 1000)
    embodied = data["embodied"]
    assert isinstance(embodied, dict) and embodied["basis"] == "given"
    assert embodied["lifetime_source"] == "given by the user (--lifetime-years)"
