"""Build ``src/greenml/data/water_countries.csv``: off-site water intensity of electricity.

Per country: Σ (share of generation by source × that source's operational water
consumption factor). Shares come from Our World in Data's energy mix (as packaged
by CodeCarbon 3.3.2, ``global_energy_mix.json``, the same file as the country
intensities); factors are the medians of Macknick, Newmark, Heath & Hallett,
"Operational water consumption and withdrawal factors for electricity generating
technologies: a review of existing literature", Environ. Res. Lett. 7 (2012)
045908, converted from gal/MWh to L/kWh. See ``data/SOURCES.md`` for the choices.

Run: ``python scripts/build_water_table.py \
../shared/data/grid_factors/codecarbon_global_energy_mix.json``
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

L_PER_GAL = 3.78541
# Median operational consumption, gal/MWh (Macknick et al. 2012): thermal plants with
# recirculating (cooling-tower) cooling, the most common kind; see SOURCES.md.
GAL_PER_MWH = {
    "coal_TWh": 687.0,  # generic coal, tower
    "gas_TWh": 198.0,  # natural-gas combined cycle, tower
    "oil_TWh": 826.0,  # no oil row: the natural-gas steam-turbine tower value as proxy
    "nuclear_TWh": 672.0,  # nuclear, tower
    "hydroelectricity_TWh": 4491.0,  # hydropower (reservoir evaporation)
    "biofuel_TWh": 553.0,  # biopower steam, tower
    "solar_TWh": 1.0,  # photovoltaic, utility scale (panel washing)
    "wind_TWh": 0.0,  # wind
    "other_renewable_exc_biofuel_TWh": 10.0,  # geothermal flash, tower (the bulk of "other")
}
HYDRO_KEY = "hydroelectricity_TWh"


def main(path: str) -> None:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = Path(__file__).parents[1] / "src" / "greenml" / "data" / "water_countries.csv"
    rows = []
    for iso3, c in sorted(data.items()):
        total = sum(float(c.get(k) or 0.0) for k in GAL_PER_MWH)
        if total <= 0:
            continue
        gal = sum(float(c.get(k) or 0.0) * f for k, f in GAL_PER_MWH.items()) / total
        hydro = float(c.get(HYDRO_KEY) or 0.0) / total
        # Thermal factors spread about ±50 % by cooling kind; hydro's by a factor of 3 or more.
        rel = round(0.5 + 0.5 * hydro, 2)
        rows.append([iso3, c.get("country_name", iso3), c.get("year", ""),
                     round(gal * L_PER_GAL / 1000, 3), round(hydro, 3), rel])
    with out.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["alpha3", "name", "year", "l_per_kwh", "hydro_share", "uncertainty_rel"])
        w.writerows(rows)
    print(f"{len(rows)} countries -> {out}")


if __name__ == "__main__":
    main(sys.argv[1])
