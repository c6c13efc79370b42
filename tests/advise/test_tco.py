"""Buy or rent: the cost model, break-even usage, inputs from flags and TOML, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.advise.tco import advise_tco
from greenml.advise.tco_inputs import NUMBERS, Given, check_mapping, load_toml, merge
from greenml.cli import main
from greenml.errors import ConfigError

H = 4 * 8760.0


def inputs(**values: object) -> dict[str, Given]:
    return merge(values, {}, None)


def test_buy_cost_is_capex_plus_electricity_and_rent_is_hours() -> None:
    advice = advise_tco(inputs(gpu="A100 SXM4 40GB", count=8, hardware_usd=200_000.0,
                               pue=1.5, price=0.1, power_w=300.0, ci=400.0))  # fmt: skip
    buy, rent = advice.plan("buy"), advice.plan("on-demand")
    idle_w, busy_w = 0.25 * 400, 300.0
    kwh_at = lambda u: (idle_w + (busy_w - idle_w) * u) * 8 * H * 1.5 / 1000  # noqa: E731
    assert buy.cost_usd(0.5) == pytest.approx(200_000 + kwh_at(0.5) * 0.1)
    assert advice.inputs["instance"].value == "aws:p4d.24xlarge"
    assert rent.cost_usd(0.5) == pytest.approx(0.5 * H * 32.7726)
    # embodied: A100 150 kg + 1/8 of a 2,500 kg host, all of it over 4 of 4 years
    assert buy.co2_g(0.0) == pytest.approx(kwh_at(0.0) * 400 + 8 * (150 + 2500 / 8) * 1000)
    u = float(advice.break_even["on-demand"].split("above ")[1].split("%")[0]) / 100
    assert buy.cost_usd(u) == pytest.approx(rent.cost_usd(u), rel=0.02)
    assert advice.decision().startswith("no usage given")


def test_usage_gives_a_decision_and_spot_uses_the_interruption_model() -> None:
    advice = advise_tco(inputs(gpu="H100 SXM", usage=0.1, spot_price=40.0,
                               checkpoint_cost_s=120.0, embodied_kg=200.0))  # fmt: skip
    spot = advice.plan("spot")
    assert "interruptions/h" in spot.basis
    assert spot.cost_usd(1.0) > 40.0 * H  # checkpoints and lost work are billed
    assert spot.cost_usd(1.0) < 1.2 * 40.0 * H
    assert "at 10% usage over 4 years" in advice.decision()
    assert any("reserved" in s for s in advice.skipped)


def test_a_reservation_is_flat_and_buying_wins_below_a_usage() -> None:
    advice = advise_tco(inputs(gpu="H100 SXM", reserved_price=60.0))
    assert advice.plan("reserved").cost_usd(0.0) == advice.plan("reserved").cost_usd(1.0)
    assert "reserved" in advice.break_even


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"gpu": "H100 SXM", "price": -0.1}, "price must be >= 0"),
        ({"gpu": "H100 SXM", "usage": 1.5}, "usage must be between 0 and 1"),
        ({"gpu": "H100 SXM", "spot_price": 200.0, "on_demand_price": 98.0}, "above the on-demand"),
        ({"gpu": "H100 SXM", "ci": 100.0, "zone": "DE"}, "not both"),
        ({"gpu": "T4"}, "no cited purchase price"),
        ({}, "give --gpu"),
        ({"gpu": "H100 SXM", "power_w": 50.0}, "idle power 175 W is above"),
    ],
)
def test_contradictory_inputs_are_one_config_error(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        advise_tco(inputs(**values))


def test_toml_is_read_and_flags_win(tmp_path: Path) -> None:
    path = tmp_path / "tco.toml"
    path.write_text('[tco]\ngpu = "H100 SXM"\nusage = 0.5\nprice = 0.2\n', encoding="utf-8")
    merged = merge({"price": 0.1, "usage": None}, load_toml(path), str(path))
    assert merged["price"] == Given(0.1, "given (--price)")
    assert merged["usage"].value == 0.5 and merged["usage"].source.endswith("tco.toml: usage")
    path.write_text("[tco]\nusage = 1.2\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="usage must be between 0 and 1"):
        load_toml(path)
    path.write_text("[tco]\nbogus = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'bogus'"):
        load_toml(path)
    path.write_text("[tco\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_toml(path)


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
    st.booleans(), st.text(max_size=5), st.none(),
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from([*NUMBERS, "gpu", "zone", "nope"]), values, max_size=4))
def test_any_toml_table_is_checked_or_refused(table: dict[str, object]) -> None:
    try:
        checked = check_mapping(table, "t.toml")
    except ConfigError:
        return
    for key, value in checked.items():
        if key in NUMBERS:
            low, high, _ = NUMBERS[key]
            assert low <= value and (high is None or value <= high)
        else:
            assert isinstance(value, str) and value


@settings(max_examples=60, deadline=None)
@given(
    usage=st.floats(-1, 2, allow_nan=False),
    price=st.floats(-1, 1, allow_nan=False),
    hardware=st.floats(-1e5, 1e6, allow_nan=False),
)
def test_any_flags_give_advice_or_a_config_error(
    usage: float, price: float, hardware: float
) -> None:
    try:
        advice = advise_tco(
            inputs(gpu="H100 SXM", usage=usage, price=price, hardware_usd=hardware)
        )
    except ConfigError:
        assert not (0 <= usage <= 1 and price >= 0 and hardware >= 0)
        return
    assert all(p.cost_usd(usage) >= 0 for p in advice.plans)


def test_cli_prints_a_decision_and_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "tco", "--gpu", "H100 SXM", "--usage", "60%", "--zone", "DE"]) == 0
    out = capsys.readouterr().out
    assert "decision: at 60% usage over 4 years" in out and "break-even:" in out
    assert main(["advise", "tco", "--gpu", "H100 SXM", "--usage", "150%"]) == 2
    err = capsys.readouterr().err
    assert "--usage must be between 0% and 100%" in err and err.count("\n") == 1
    assert main(["advise", "tco", "--gpu", "H100 SXM", "--price", "-1"]) == 2


def test_usage_from_a_measured_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from greenml.store.repository import Store

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store(url) as store:
        run_id = store.create_run(name="job", command=["python", "t.py"], tags={},
                                  started_at=1e9, pid=1, hostname="h")  # fmt: skip
        energy = {"total_j": 1e5, "components": {}}
        store.finish_run(run_id, status="completed", exit_code=0, duration_s=3600.0,
                         energy=energy, ended_at=1e9 + 3600)  # fmt: skip
    args = ["advise", "tco", "--db", url, "--workload", run_id, "--gpu", "H100 SXM", "--json"]
    assert main([*args, "--runs-per-year", "876"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["usage"] == pytest.approx(0.1)  # 876 h of 8,760
    assert main([*args, "--runs-per-year", "10000"]) == 2  # more hours than a year holds


def test_a_price_trace_gives_its_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "prices.csv"
    trace.write_text(
        "Datetime (UTC),Datetime (Local),Price (USD/MWh)\n"
        "2023-01-01 00:00:00,2023-01-01 01:00:00,50\n"
        "2023-01-01 01:00:00,2023-01-01 02:00:00,150\n"
        "2023-01-01 02:00:00,2023-01-01 03:00:00,100\n",
        encoding="utf-8",
    )
    args = ["advise", "tco", "--gpu", "H100 SXM", "--usage", "50%", "--json"]
    assert main([*args, "--price-trace", str(trace)]) == 0
    price = json.loads(capsys.readouterr().out)["inputs"]["price"]
    assert price["value"] == pytest.approx(0.1) and "mean of --price-trace" in price["source"]
    assert main([*args, "--price-trace", str(trace), "--price", "0.2"]) == 2
