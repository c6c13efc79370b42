"""Regenerate the packaged carbon-intensity tables from the public data in ../shared/data.

Writes three small CSV files into ``src/greenml/data/`` (see its SOURCES.md):

- ``intensity_countries.csv``: one row per country, Our World in Data / Ember
  yearly carbon intensity via CodeCarbon 3.3.2's ``global_energy_mix.json``;
- ``intensity_cloud_regions.csv``: Google Cloud regions from Google's yearly
  files (every year, so an earlier year stays selectable; the newest is the
  default), AWS and Azure regions (and any GCP
  region Google's files lack) from Cloud Carbon Footprint's coefficients;
- ``intensity_zones.csv``: per Electricity Maps zone and year, the mean of the
  hourly direct and life-cycle intensities.

pycountry (a CodeCarbon dependency, present in the dev environment) supplies
ISO alpha-2 codes and alternative English names; it is not needed at run time.

Usage::

    python scripts/build_intensity_tables.py [--data ../shared/data] [--out src/greenml/data]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data"
DEFAULT_OUT = REPO / "src" / "greenml" / "data"

OWID = "Our World in Data / Ember (CodeCarbon 3.3.2 global_energy_mix.json)"
# Common English names that neither OWID nor ISO 3166 (pycountry) spell this way.
EXTRA_NAMES = {
    "GBR": ["UK", "Great Britain", "Britain"],
    "USA": ["USA", "United States of America", "America"],
    "ARE": ["UAE"],
    "CZE": ["Czech Republic"],
    "NLD": ["Holland", "The Netherlands"],
    "MMR": ["Burma"],
    "SWZ": ["Swaziland"],
    "MKD": ["Macedonia"],
    "COD": ["DR Congo", "DRC"],
    "COG": ["Republic of the Congo", "Congo-Brazzaville"],
}


def _write(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    print(f"wrote {path} ({len(rows)} rows)")


def _num(value: float) -> str:
    """Two decimals, no trailing zeros."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def countries(data: Path) -> list[list[object]]:
    """One row per country: codes, names, year, intensity (life-cycle, see SOURCES.md)."""
    import pycountry

    mix = json.loads((data / "grid_factors" / "codecarbon_global_energy_mix.json").read_text())
    rows: list[list[object]] = []
    for alpha3, entry in sorted(mix.items()):
        iso = pycountry.countries.get(alpha_3=alpha3)
        if iso is None:
            raise SystemExit(f"{alpha3} is not an ISO 3166 alpha-3 code")
        names = [entry["country_name"], iso.name]
        names += [getattr(iso, a) for a in ("common_name", "official_name") if hasattr(iso, a)]
        names += EXTRA_NAMES.get(alpha3, [])
        unique = list(dict.fromkeys(n for n in names if n))
        rows.append([iso.alpha_2, alpha3, unique[0], ";".join(unique[1:]), entry["year"],
                     _num(entry["carbon_intensity"]), "lifecycle", OWID])  # fmt: skip
    return rows


def _google(data: Path) -> dict[tuple[str, int], list[object]]:
    """Google Cloud regions, one row per region and year of Google's yearly files."""
    latest: dict[tuple[str, int], list[object]] = {}
    for path in sorted((data / "cloud_regions").glob("google_cloud_*.csv")):
        year = int(re.findall(r"\d{4}", path.stem)[0])
        with path.open(encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader)
            scope = "lifecycle" if header[3].lower().startswith("lifecycle") else "direct"
            for row in reader:
                if not row or not row[0].strip() or not row[3].strip():
                    continue
                region = row[0].strip()
                source = f"Google Cloud region-carbon-info {year}"
                latest[(region, year)] = ["gcp", region, region, row[1].strip(), year,
                                  _num(float(row[3])), scope, source]  # fmt: skip
    return latest


def _ccf_value(text: str) -> float:
    """CCF metric t/kWh → g/kWh; ``000077`` (a lost ``0.``, two Azure rows) reads as 0.000077."""
    if text.startswith("000"):
        text = "0." + text
    return float(text) * 1e6


def _ccf(data: Path, provider: str) -> list[list[object]]:
    rows: list[list[object]] = []
    path = data / "grid_factors" / f"ccf_grid-emissions-factors-{provider}.csv"
    with path.open(encoding="utf-8") as f:
        for record in csv.DictReader(f):
            name = record["Region"].strip()
            origin = record["Source"].strip()
            grid = (record.get("NERC Region") or "").strip()
            where = f", NERC {grid}" if grid else ""
            # CCF's GCP rows are Google's 2019 life-cycle figures; the rest are direct
            # (EPA eGRID output rates, EEA and carbonfootprint.com generation factors).
            scope = "lifecycle" if origin == "Google" else "direct"
            source = f"Cloud Carbon Footprint coefficients ({origin}{where})"
            location = record.get("Country") or record.get("Location") or ""
            rows.append([provider, name.lower().replace(" ", ""), name, location.strip(), "",
                         _num(_ccf_value(record["CO2e (metric ton/kWh)"].strip())), scope,
                         source])  # fmt: skip
    return rows


def cloud_regions(data: Path) -> list[list[object]]:
    """Google's own figures for GCP; CCF for AWS, Azure and GCP regions Google lacks."""
    google = _google(data)
    rows = list(google.values())
    named = {region for region, _year in google}
    rows += [r for r in _ccf(data, "gcp") if r[1] not in named]
    rows += _ccf(data, "aws") + _ccf(data, "azure")
    return sorted(rows, key=lambda r: (str(r[0]), str(r[1]), str(r[4])))


def zones(data: Path) -> list[list[object]]:
    """Per zone and year: mean direct and life-cycle intensity of the hourly export."""
    rows: list[list[object]] = []
    for path in sorted((data / "carbon_intensity").glob("*_hourly.csv")):
        file_zone, year = path.stem.rsplit("_", 2)[:2]
        with path.open(encoding="utf-8") as f:
            records = list(csv.DictReader(f))
        first = records[0]
        direct = [float(r["Carbon Intensity gCO₂eq/kWh (direct)"]) for r in records]
        lca = [float(r["Carbon Intensity gCO₂eq/kWh (LCA)"]) for r in records]
        estimated = sum(r["Data Estimated"].strip().lower() == "true" for r in records)
        if any(r["Datetime (UTC)"][:4] != year for r in records):
            raise SystemExit(f"{path.name}: rows outside {year}")
        zone = first["Zone Id"]
        alias = file_zone if file_zone != zone else ""
        source = f"Electricity Maps hourly data, {year} mean ({path.name})"
        rows.append([zone, alias, first["Zone Name"], first["Country"], int(year),
                     _num(sum(direct) / len(direct)), _num(sum(lca) / len(lca)), len(records),
                     estimated, source])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="shared/data folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args()
    _write(args.out / "intensity_countries.csv",
           ["alpha2", "alpha3", "name", "other_names", "year", "g_per_kwh", "scope", "source"],
           countries(args.data))  # fmt: skip
    _write(args.out / "intensity_cloud_regions.csv",
           ["provider", "region", "name", "location", "year", "g_per_kwh", "scope", "source"],
           cloud_regions(args.data))  # fmt: skip
    _write(args.out / "intensity_zones.csv",
           ["zone", "alias", "zone_name", "country", "year", "direct_g_per_kwh",
            "lifecycle_g_per_kwh", "hours", "estimated_hours", "source"],
           zones(args.data))  # fmt: skip


if __name__ == "__main__":
    main()
