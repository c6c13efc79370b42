"""What a person reads in the terminal: units that fit, one unit side by side, safe text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.cli import render
from greenml.cli.run import progress_text
from greenml.run.projection import Interval, Projection


@pytest.mark.parametrize(
    ("joules", "shown"),
    [(1.43e-05 * 3.6e6, "51.5 J"), (0.0123, "12.3 mJ"), (999.9, "1.00 kJ"), (999.4, "999 J"),
     (14_200.0, "14.2 kJ"), (560 * 3.6e6, "560 kWh"), (1.43 * 3.6e6, "1.43 kWh"), (0.0, "0 J")],
)  # fmt: skip
def test_energy_reads_in_the_unit_that_fits(joules: float, shown: str) -> None:
    assert render.energy(joules) == shown


@pytest.mark.parametrize(
    ("kg", "shown"),
    [(5.72e-05, "57.2 mg CO2eq"), (0.5, "500 g CO2eq"), (1234.0, "1.23 t CO2eq")],
)
def test_co2_reads_in_the_unit_that_fits(kg: float, shown: str) -> None:
    assert render.co2(kg) == shown


@given(st.floats(min_value=-1e18, max_value=1e18, allow_nan=False))
def test_no_figure_is_written_with_an_exponent_or_more_than_four_digits(joules: float) -> None:
    number, unit = render.energy(joules).split(" ")
    if abs(joules) >= 1e-3:  # below the smallest unit a tiny figure may need an exponent
        assert "e" not in number and len(number.lstrip("-").replace(".", "")) <= 4, number
    assert unit in {name for _, name in render.ENERGY_UNITS}


def projection(total_j: float) -> Projection:
    return Projection(
        step=35, total=100, fraction=0.35, elapsed_s=60.0, energy_j=total_j * 0.35,
        duration_s=Interval(170.0), total_energy_j=Interval(total_j, total_j * 0.9, total_j * 1.1),
        eta_unix_s=1.7e9, increments_used=30, confidence=0.9, co2_g=Interval(total_j / 3.6e6 * 400),
    )  # fmt: skip


def test_the_live_line_uses_one_unit_for_the_total_and_the_projection() -> None:
    p = projection(5.0 * 3.6e6)
    line = render.status_line(60.0, 250.0, 1.75 * 3.6e6, 0.05, like_j=p.total_energy_j.value)
    line += progress_text(p)
    assert "1.75 kWh" in line and "projected 5.00 kWh [4.50–5.50]" in line
    assert "2.00 kg CO2eq" in line  # carbon projected too
    small = render.status_line(60.0, 25.0, 900.0, 0.05, like_j=5.0 * 3.6e6)
    assert "0.000250 kWh" in small or "0.00025 kWh" in small  # the projection's unit, not J


@pytest.mark.parametrize("columns", [20, 40, 80, 200])
def test_the_live_line_never_wraps(columns: int) -> None:
    line = render.status_line(3600.0, 250.0, 1.75 * 3.6e6, 0.05) + progress_text(projection(1e7))
    cut = render.fit_width(line, columns)
    assert len(cut) <= columns - 1
    assert cut == line or cut.endswith("…")


def test_the_summary_table_is_readable_at_80_columns() -> None:
    import io
    from datetime import datetime, timezone

    from rich.console import Console

    from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement

    gpu = "NVIDIA H100 80GB HBM3"
    m = Measurement("run", datetime.now(timezone.utc), 82.0, {
        "gpu": ComponentEnergy({"gpu0": DeviceEnergy(123456.0, "power-integrated", 0.05, gpu),
                                "gpu1": DeviceEnergy(120000.0, "counter", 0.05, gpu)}),
        "cpu": ComponentEnergy({"cpu0": DeviceEnergy(1070.0, "estimated", 0.5,
                                                     "Intel(R) Xeon(R) Platinum 8480+ (model)")}),
    })  # fmt: skip
    out = io.StringIO()
    Console(file=out, width=80).print(render.measurement_table(m, "greenml run x", columns=80))
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) == 1 + 2 + 3 + 1 + 1  # title, header + rule, one line per device, total
    body = out.getvalue()
    for figure in ("123 kJ", "1.51 kW", "power-integrated", "245 kJ", "50 %"):
        assert figure in body  # figures are never cut
