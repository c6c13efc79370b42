"""Everyday equivalences for an amount of CO2eq or electricity, with cited factors.

Emission factors are the US EPA's Greenhouse Gas Equivalencies Calculator,
"Calculations and References", in the revision built on eGRID2022 and FHWA
2022 data (the 2024 update, unchanged through 2025): they were checked against
quotations of that page, not fetched at run time. EPA's factors are US
averages; the equivalences illustrate a size, they are not an inventory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from greenml.quantities import J_PER_KWH as _J_PER_KWH

Basis = Literal["co2", "energy"]

_EPA = (
    "US EPA Greenhouse Gas Equivalencies Calculator, Calculations and References, "
    "2024 revision (eGRID2022 and FHWA 2022 data), "
    "https://www.epa.gov/energy/greenhouse-gases-equivalencies-calculator-calculations-and-references"
)
_EIA = (
    "US EIA, 'How much electricity does an American home use?' (FAQ): average annual "
    "consumption of a US residential utility customer in 2022, "
    "https://www.eia.gov/tools/faqs/faq.php?id=97&t=3"
)


@dataclass(frozen=True)
class Factor:
    """How much of a quantity one everyday unit stands for.

    Attributes:
        key: Stable identifier (JSON key).
        label: The unit, plural, e.g. ``passenger car-years``.
        per_unit: Amount per unit: grams CO2eq (``co2``) or joules (``energy``).
        basis: What the factor divides: ``co2`` or ``energy``.
        description: The factor in the source's words and units.
        citation: Source, version and address.
    """

    key: str
    label: str
    per_unit: float
    basis: Basis
    description: str
    citation: str


@dataclass(frozen=True)
class Equivalence:
    """An amount expressed in one everyday unit."""

    factor: Factor
    value: float

    @property
    def key(self) -> str:
        return self.factor.key

    @property
    def label(self) -> str:
        return self.factor.label

    def to_json(self) -> dict[str, object]:
        """Value, unit label, factor and citation, JSON-ready."""
        return {
            "value": self.value,
            "unit": self.factor.label,
            "basis": self.factor.basis,
            "factor": self.factor.description,
            "source": self.factor.citation,
        }


_G_PER_T = 1e6

FACTORS: tuple[Factor, ...] = (
    Factor(
        "passenger_car_years",
        "passenger car-years (gasoline, driven for one year)",
        4.29 * _G_PER_T,
        "co2",
        "4.29 t CO2e per gasoline-powered passenger vehicle per year "
        "(8.89e-3 t CO2/gal × 10,917 mi ÷ 22.8 mpg ÷ 0.994 CO2/CO2e)",
        _EPA,
    ),
    Factor(
        "smartphone_charges",
        "smartphone charges",
        1.24e-5 * _G_PER_T,
        "co2",
        "1.24e-5 t CO2 per smartphone charged",
        _EPA,
    ),
    Factor(
        "us_household_electricity_emission_years",
        "US household-years of electricity use (emissions)",
        4.798 * _G_PER_T,
        "co2",
        "4.798 t CO2 per home per year of electricity use",
        _EPA,
    ),
    Factor(
        "us_household_energy_emission_years",
        "US household-years of total energy use (emissions)",
        7.46 * _G_PER_T,
        "co2",
        "7.46 t CO2 per home per year of energy use (electricity, gas, fuel oil, propane)",
        _EPA,
    ),
    Factor(
        "us_household_electricity_years",
        "US household-years of electricity (energy)",
        10_791 * _J_PER_KWH,
        "energy",
        "10,791 kWh per US residential customer per year (2022)",
        _EIA,
    ),
)


MIN_SHOWN = 0.01
"""An equivalence below a hundredth of its unit (``2.0e-08 passenger car-years``) says
nothing a reader can picture: it is left out."""


def equivalences(co2_g: float | None, energy_j: float | None = None) -> list[Equivalence]:
    """Everyday equivalences of an amount of CO2eq and of electricity.

    Args:
        co2_g: Emissions in grams CO2eq; ``None`` leaves out the emission-based ones.
        energy_j: Electricity in joules; ``None`` leaves out the energy-based ones.

    Returns:
        One :class:`Equivalence` per factor that applies and comes to at least
        :data:`MIN_SHOWN` of its unit, in :data:`FACTORS` order.
    """
    amounts: dict[Basis, float | None] = {"co2": co2_g, "energy": energy_j}
    out = []
    for factor in FACTORS:
        amount = amounts[factor.basis]
        if amount is not None and abs(amount / factor.per_unit) >= MIN_SHOWN:
            out.append(Equivalence(factor, amount / factor.per_unit))
    return out
