"""The estimator's inputs beside the devices (issue 31): host CPU and memory, idle cluster
energy, a measured total, the lifetime share in use, a factor's year, and the wording of
what bounds what."""

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
from greenml.accounting.footprint import prepare_footprint
from greenml.cli import main
from greenml.cli.estimate import estimate as estimate_cmd
from greenml.errors import ConfigError
from greenml.estimation.estimator import estimate
from greenml.estimation.parts import HOST_MODEL_REL, MEMORY_W_PER_GB, HostPower
from greenml.estimation.uncertainty import POWER_MODEL_REL


@pytest.fixture(autouse=True)
def no_user_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in location.ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(location, "default_config_path", lambda: tmp_path / "none.toml")


@pytest.fixture
def greenml_with_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    @click.group()
    def local() -> None:
        """Test group."""

    local.add_command(estimate_cmd)
    monkeypatch.setattr(app, "cli", local)


def test_host_terms_follow_green_algorithms() -> None:
    """E = t × (n_c × P_c × u_c + n_m × 0.3725 W/GB) (Lannelongue et al. 2021)."""
    host = HostPower(cpu_cores=32, cpu_core_w=12.0, cpu_usage=0.5, memory_gb=256)
    e = estimate(gpu="A100", count=4, hours=10, host=host)
    host_w = 32 * 12.0 * 0.5 + 256 * MEMORY_W_PER_GB
    assert e.assumptions["host_power_w"]["value"] == pytest.approx(host_w)
    parts = {p.name: p.energy_j for p in e.parts}
    assert parts["host"] == pytest.approx(host_w * 10 * 3600)
    assert parts["devices"] == pytest.approx(4 * 10 * 3600 * 400)
    assert e.it_energy_j == pytest.approx(parts["host"] + parts["devices"])
    assert "host energy = " in e.formula and "IT energy = devices" in e.formula
    # Both parts are models at ±30 %: the combined spread is ±30 % of their sum less
    # their independence (quadrature, weighted by energy).
    assert e.spread is not None and e.spread.energy_rel < POWER_MODEL_REL
    assert HOST_MODEL_REL == POWER_MODEL_REL


def test_host_terms_scale_with_trials_and_need_both_core_inputs() -> None:
    host = HostPower(cpu_cores=8, cpu_core_w=10.0)
    one = estimate(gpu="T4", hours=2, host=host)
    three = estimate(gpu="T4", hours=2, host=host, trials=3)
    assert three.it_energy_j == pytest.approx(3 * one.it_energy_j)
    with pytest.raises(ConfigError, match="needs both cpu_cores and cpu_core_w"):
        estimate(gpu="T4", hours=2, host=HostPower(cpu_cores=8))
    with pytest.raises(ConfigError, match=r"cpu_usage must be in \(0, 1\]"):
        estimate(gpu="T4", hours=2, host=HostPower(cpu_cores=8, cpu_core_w=10, cpu_usage=2))


def test_idle_power_over_the_wall_time_and_idle_total() -> None:
    by_w = estimate(gpu="A100", count=8, hours=10, idle_w=1000.0)
    idle = {p.name: p for p in by_w.parts}["idle"]
    assert idle.energy_j == pytest.approx(1000 * 10 * 3600)  # wall hours, not device-hours
    by_kwh = estimate(gpu="A100", count=8, hours=10, idle_kwh=10.0)
    assert by_kwh.it_energy_j == pytest.approx(by_w.it_energy_j)
    with pytest.raises(ConfigError, match="idle_kwh or idle_w, not both"):
        estimate(gpu="A100", hours=1, idle_kwh=1, idle_w=1)
    with pytest.raises(ConfigError, match="idle_w needs the job's time"):
        estimate(energy_kwh=5.0, idle_w=100.0)


def test_a_measured_energy_needs_no_device_and_gives_carbon_water_cost() -> None:
    e = estimate(energy_kwh=914.0, ci=394.0, price=0.1, pue=1.1)
    assert e.gpu is None and e.power_w is None and e.mode == "energy"
    assert e.it_energy_j == pytest.approx(914 * 3.6e6)
    assert e.co2_g == pytest.approx(914 * 1.1 * 394)
    assert e.cost_usd == pytest.approx(914 * 1.1 * 0.1)
    data = e.to_json()
    assert data["gpu"] is None and data["water_l"] is not None and data["water_l"] > 0
    assert data["embodied"]["status"] == "unknown"  # no device, no hours: said, not guessed
    assert e.spread is not None and e.spread.energy_rel == 0.0
    assert "energy given (measured)" in e.spread.basis


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"energy_kwh": 1, "flops": 1e20}, "replaces flops and params × tokens"),
        ({"energy_kwh": 1, "gpu": "A100", "power_w": 300}, "power_w does not apply"),
        ({"energy_kwh": 1, "gpu": "A100", "hours": 1, "mfu": 0.4}, "mfu does not apply"),
        ({"energy_kwh": 0}, "energy_kwh must be a positive number"),
        ({"hours": 1}, "gpu is needed"),
        ({"energy_kwh": 1, "host": HostPower(memory_gb=64)}, "needs the job's time"),
    ],
)
def test_bad_new_inputs_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        estimate(**kwargs)  # type: ignore[arg-type]


def test_lifetime_share_in_use_shortens_the_amortization() -> None:
    full = estimate(gpu="A100", hours=1000, footprint=prepare_footprint(lifetime_years=6))
    used = estimate(gpu="A100", hours=1000, footprint=prepare_footprint(
        lifetime_years=6, lifetime_use=0.85))  # fmt: skip
    kg = [x.footprint["embodied"]["kg"] for x in (full, used)]  # type: ignore[index]
    assert kg[1] == pytest.approx(kg[0] / 0.85)
    assert used.footprint["embodied"]["lifetime_in_use"] == 0.85  # type: ignore[index]
    with pytest.raises(ConfigError, match=r"--lifetime-use must be a share in \(0, 1\]"):
        prepare_footprint(lifetime_use=1.5)


def run(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(estimate_cmd, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_cli_measured_energy_with_a_region_of_an_earlier_year() -> None:
    """BLOOM's deployment was accounted with Google's 2021 us-central1 figure (394 g/kWh)."""
    data = run("--energy-kwh", "914", "--region", "us-central1", "--year", "2021")
    assert data["intensity_g_per_kwh"] == 394.0 and data["gpu"] is None
    assert data["co2_t"] == pytest.approx(914 * 394 / 1e6)
    source = str(data["intensity_source"])
    assert "region-carbon-info 2021" in source and "--year 2021" in source
    newest = run("--energy-kwh", "914", "--region", "us-central1")
    assert newest["intensity_g_per_kwh"] == 412.72


def test_cli_table_says_which_part_bounds_what() -> None:
    result = CliRunner().invoke(estimate_cmd, ["--gpu", "H100", "--flops", "1e21", "--ci", "300"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "(lower bound)" not in out
    assert "time is a lower bound" in out and "not a bound" in out
    given = CliRunner().invoke(estimate_cmd, ["--gpu", "H100", "--flops", "1e21",
                                              "--power-w", "500"])  # fmt: skip
    assert "(lower bound)" in given.output


def test_cli_host_and_idle_options() -> None:
    data = run("--gpu", "A100", "--count", "8", "--hours", "10", "--cpu-cores", "64",
               "--cpu-core-w", "5", "--host-memory-gb", "512", "--idle-w", "800")  # fmt: skip
    parts = data["parts_kwh"]
    assert isinstance(parts, dict)
    assert parts["host"] == pytest.approx((64 * 5 + 512 * 0.3725) * 10 / 1000)
    assert parts["idle"] == pytest.approx(8.0)
    assert parts["devices"] == pytest.approx(32.0)


@pytest.mark.usefixtures("greenml_with_estimate")
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--energy-kwh", "1", "--year", "2021"], "--year picks the year of one"),
        (["--energy-kwh", "1", "--region", "us-central1", "--year", "2015"],
         "no gcp:us-central1 figure for 2015"),
        (["--energy-kwh", "1", "--country", "FR", "--year", "2019"], "no FR figure for 2019"),
        (["--energy-kwh", "1", "--zone", "DE", "--ci", "3", "--year", "2023"], "and no --ci"),
        (["--hours", "1"], "gpu is needed"),
        (["--gpu", "A100", "--hours", "1", "--lifetime-use", "0"], "--lifetime-use must be"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["estimate", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("greenml: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, 1e308, 1e-300, 5e15]),
).map(repr)


@pytest.mark.usefixtures("greenml_with_estimate")
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(energy=NUMBERS, idle=NUMBERS, cores=NUMBERS, use=NUMBERS,
       year=st.integers(1900, 2100).map(str))  # fmt: skip
def test_fuzzed_new_options_give_valid_json_or_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], energy: str, idle: str, cores: str, use: str, year: str
) -> None:
    code = main(["estimate", "--energy-kwh", energy, "--idle-kwh", idle, "--gpu", "A100",
                 "--hours", "5", "--cpu-cores", cores, "--cpu-core-w", "4",
                 "--lifetime-use", use, "--region", "us-central1", "--year", year,
                 "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    if code == 0:
        data = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
        assert isinstance(data, dict) and data["energy_kwh"] > 0
    else:
        assert code == 2 and err.count("\n") == 1 and err.startswith("greenml: error:"), err


def test_a_tpu_defaults_to_its_bf16_peak() -> None:
    """LaMDA (Thoppilan et al. 2022): 3.55e23 FLOPs, 1024 TPU v3 at 56.5 % → 57.7 days."""
    e = estimate(gpu="TPU v3", count=1024, flops=3.55e23, mfu=0.565)
    assert e.assumptions["precision"]["value"] == "bf16"
    assert "no fp16 peak" in e.assumptions["precision"]["source"]
    assert e.wall_hours / 24 == pytest.approx(57.7, rel=0.002)
