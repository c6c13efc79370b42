"""Yearly intensity per country, cloud region and zone, checked against the raw public data."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from greenml.accounting.intensity import GridIntensity
from greenml.accounting.static import (
    cloud_region_source,
    country_source,
    known_cloud_regions,
    known_countries,
    known_zones,
    zone_source,
)
from greenml.errors import ConfigError

REPO = Path(__file__).parents[2]
SHARED = REPO.parent / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared data at {SHARED}")


def value_of(source: object) -> GridIntensity:
    result = source.intensity(0.0, 3600.0)  # type: ignore[attr-defined]
    assert isinstance(result, GridIntensity)
    assert len(result.series.values) == 1 and result.series.covers(-1e12, 1e12)
    return result


def g(source: object) -> float:
    return float(value_of(source).series.values[0])


# ----------------------------------------------------------------------------- countries


@needs_shared
@pytest.mark.parametrize("alpha3", ["FRA", "DEU", "USA", "IND", "PRY", "ESH", "GLP"])
def test_country_values_and_years_match_the_raw_owid_data(alpha3: str) -> None:
    raw = json.loads((SHARED / "grid_factors" / "codecarbon_global_energy_mix.json").read_text())
    entry = raw[alpha3]
    result = value_of(country_source(alpha3))
    assert result.series.values[0] == pytest.approx(entry["carbon_intensity"], abs=0.006)
    prov = result.provenance
    assert prov.year == entry["year"]
    assert (prov.resolution, prov.kind, prov.scope) == ("yearly", "average", "lifecycle")
    assert "Our World in Data" in prov.source and "Ember" in prov.source


@needs_shared
def test_every_country_of_the_raw_data_is_found_by_its_alpha3_code() -> None:
    raw = json.loads((SHARED / "grid_factors" / "codecarbon_global_energy_mix.json").read_text())
    for alpha3, entry in raw.items():
        assert g(country_source(alpha3)) == pytest.approx(entry["carbon_intensity"], abs=0.006)


def test_france_is_lifecycle_2023_and_located_by_its_alpha2_code() -> None:
    prov = value_of(country_source("France")).provenance
    assert (prov.location, prov.year, prov.scope) == ("FR", 2023, "lifecycle")
    assert "FR 2023; yearly, average, lifecycle" in prov.describe()


@pytest.mark.parametrize(
    "names",
    [
        ["FR", "fr", "FRA", "fra", "France", "  france  ", "FRANCE", "French Republic"],
        ["GB", "GBR", "United Kingdom", "UK", "Great Britain", "united kingdom"],
        ["US", "USA", "United States", "United States of America", "usa"],
        ["KR", "KOR", "South Korea", "Korea, Republic of"],
        ["CI", "CIV", "Cote d'Ivoire", "Côte d'Ivoire", "côte d’ivoire"],
        ["TR", "TUR", "Turkey", "Türkiye", "turkiye"],
    ],
)
def test_country_name_variants_give_the_same_figure(names: list[str]) -> None:
    values = {g(country_source(name)) for name in names}
    assert len(values) == 1


def test_unknown_country_lists_the_closest_names() -> None:
    with pytest.raises(ConfigError) as err:
        country_source("Frnace")
    message = str(err.value)
    assert "unknown country 'Frnace'" in message
    assert "France (FR)" in message
    assert message.split("closest known: ")[1].count(",") <= 4  # at most five names


def test_unknown_country_code_suggests_codes() -> None:
    with pytest.raises(ConfigError, match=r"closest known: .*\(FR\)"):
        country_source("FRR")


# ----------------------------------------------------------------------------- cloud regions


def _google_newest(shared: Path) -> dict[str, tuple[int, float, bool]]:
    """region → (year, g/kWh, lifecycle?) from the newest Google file listing it."""
    newest: dict[str, tuple[int, float, bool]] = {}
    for path in sorted((shared / "cloud_regions").glob("google_cloud_*.csv")):
        with path.open(encoding="utf-8") as f:
            reader = csv.reader(f)
            lifecycle = next(reader)[3].startswith("Lifecycle")
            for row in reader:
                if row and row[3]:
                    newest[row[0]] = (int(path.stem[-4:]), float(row[3]), lifecycle)
    return newest


@needs_shared
def test_google_regions_use_the_newest_yearly_file_that_lists_them() -> None:
    newest = _google_newest(SHARED)
    assert newest["us-central1"] == (2024, 412.72, False)
    for region, (year, value, lifecycle) in newest.items():
        result = value_of(cloud_region_source(region))
        assert result.series.values[0] == pytest.approx(value, abs=0.006)
        prov = result.provenance
        assert prov.year == year and str(year) in prov.source
        assert prov.scope == ("lifecycle" if lifecycle else "direct")
        assert prov.location == f"gcp:{region}"


@needs_shared
@pytest.mark.parametrize(
    ("provider", "name", "query"),
    [
        ("aws", "us-east-1", "us-east-1"),
        ("aws", "eu-west-1", "aws:eu-west-1"),
        ("aws", "ap-southeast-1", "AWS:AP-SOUTHEAST-1"),
        ("azure", "West Europe", "westeurope"),
        ("azure", "West Europe", "West Europe"),
        ("azure", "UK South", "azure:uksouth"),
        ("azure", "East US 2", "eastus2"),
    ],
)
def test_aws_and_azure_regions_match_cloud_carbon_footprint(
    provider: str, name: str, query: str
) -> None:
    path = SHARED / "grid_factors" / f"ccf_grid-emissions-factors-{provider}.csv"
    with path.open(encoding="utf-8") as f:
        tonnes = next(float(r["CO2e (metric ton/kWh)"]) for r in csv.DictReader(f)
                      if r["Region"] == name)  # fmt: skip
    result = value_of(cloud_region_source(query))
    assert result.series.values[0] == pytest.approx(tonnes * 1e6, abs=0.01)
    prov = result.provenance
    assert prov.scope == "direct" and prov.year is None
    assert prov.location.startswith(provider + ":")
    assert "Cloud Carbon Footprint" in prov.source


def test_azure_rows_that_lost_their_decimal_point_are_read_as_intended() -> None:
    # CCF's file has "000077" and "000402" for these two; 0.000077 t/kWh = 77 g/kWh.
    assert g(cloud_region_source("finlandcentral")) == pytest.approx(77.0)
    assert g(cloud_region_source("Germany West Central")) == pytest.approx(402.0)


def test_a_provider_prefix_restricts_the_lookup() -> None:
    with pytest.raises(ConfigError, match=r"closest known: .*gcp:us-central1"):
        cloud_region_source("aws:us-central1")
    with pytest.raises(ConfigError, match="unknown cloud provider 'ibm'"):
        cloud_region_source("ibm:us-east-1")
    assert g(cloud_region_source("google:us-central1")) == g(cloud_region_source("us-central1"))


def test_unknown_region_lists_close_region_names() -> None:
    with pytest.raises(ConfigError) as err:
        cloud_region_source("us-east-7")
    assert "aws:us-east-1" in str(err.value)
    assert "gcp:us-east1" in str(err.value)


# ----------------------------------------------------------------------------- zones


def _raw_means(path: Path) -> tuple[float, float]:
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    direct = [float(r["Carbon Intensity gCO₂eq/kWh (direct)"]) for r in rows]
    lca = [float(r["Carbon Intensity gCO₂eq/kWh (LCA)"]) for r in rows]
    return sum(direct) / len(direct), sum(lca) / len(lca)


@needs_shared
@pytest.mark.parametrize(
    ("zone", "file"),
    [("DE-LU", "DE-LU"), ("de", "DE-LU"), ("GB", "GB"), ("us-cal-ciso", "US-CAL-CISO")],
)
def test_zone_means_match_the_hourly_files(zone: str, file: str) -> None:
    for year in (2022, 2023):
        direct, lca = _raw_means(SHARED / "carbon_intensity" / f"{file}_{year}_hourly.csv")
        life = value_of(zone_source(zone, year=year))
        assert life.series.values[0] == pytest.approx(lca, abs=0.006)
        assert life.provenance.scope == "lifecycle" and life.provenance.year == year
        assert g(zone_source(zone, year=year, scope="direct")) == pytest.approx(direct, abs=0.006)


def test_zone_defaults_to_the_newest_year_and_names_the_electricity_maps_zone() -> None:
    prov = value_of(zone_source("DE-LU")).provenance
    assert prov.year == 2023
    assert prov.location == "DE"  # the export's own zone id; DE-LU is the file's name for it
    assert "Electricity Maps" in prov.source and "DE-LU_2023_hourly.csv" in prov.source
    assert (prov.resolution, prov.kind) == ("yearly", "average")


def test_zone_errors() -> None:
    with pytest.raises(ConfigError, match="years available: \\[2022, 2023\\]"):
        zone_source("GB", year=2019)
    with pytest.raises(ConfigError, match="closest known: US-CAL-CISO"):
        zone_source("US-CAL-CIS")


def test_known_names_lists() -> None:
    assert {"FR", "FRA", "France"} <= set(known_countries())
    assert {"gcp:us-central1", "aws:us-east-1", "azure:westeurope"} <= set(known_cloud_regions())
    assert {"DE", "DE-LU", "GB", "US-CAL-CISO"} <= set(known_zones())


# ----------------------------------------------------------------------------- build script


@needs_shared
@pytest.mark.skipif(importlib.util.find_spec("pycountry") is None, reason="needs pycountry")
def test_the_build_script_reproduces_the_packaged_tables(tmp_path: Path) -> None:
    script = REPO / "scripts" / "build_intensity_tables.py"
    subprocess.run(
        [sys.executable, str(script), "--data", str(SHARED), "--out", str(tmp_path)],
        check=True, capture_output=True,
    )  # fmt: skip
    data = REPO / "src" / "greenml" / "data"
    for name in ("intensity_countries.csv", "intensity_cloud_regions.csv", "intensity_zones.csv"):
        assert (tmp_path / name).read_text() == (data / name).read_text(), name


def test_zone_that_is_a_country_points_to_country() -> None:
    with pytest.raises(ConfigError) as info:
        zone_source("FR")
    message = str(info.value)
    assert "--country FR" in message and "France" in message
    assert "country-level yearly mean" in message and "closest known" not in message
    with pytest.raises(ConfigError, match=r"closest known: US-CAL-CISO.*; or --country US"):
        zone_source("US-CAL-CIS")


def test_an_earlier_google_year_stays_selectable() -> None:
    """BLOOM's deployment (Luccioni et al. 2022) used Google's 2021 us-central1 figure,
    394 gCO2eq/kWh; the newest (2024) is the default."""
    old = cloud_region_source("us-central1", year=2021)
    assert old.intensity(0, 1).series.value_at(0) == 394.0
    assert old.intensity(0, 1).provenance.year == 2021
    assert cloud_region_source("gcp:us-central1").intensity(0, 1).provenance.year == 2024
    life = cloud_region_source("us-central1", year=2019).intensity(0, 1).provenance
    assert life.scope == "lifecycle"
    with pytest.raises(ConfigError, match=r"no gcp:us-central1 figure for 2018; years .*2019"):
        cloud_region_source("us-central1", year=2018)


def test_a_country_year_other_than_the_packaged_one_is_refused() -> None:
    fr = country_source("FR", year=2023).intensity(0, 1)
    assert fr.provenance.year == 2023
    with pytest.raises(ConfigError, match=r"no FR figure for 2019; years available: \[2023\]"):
        country_source("FR", year=2019)
