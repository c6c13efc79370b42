"""The run page shows market-based and embodied CO2eq, water and work done beside the
location-based figure, each with its method and source; missing blocks say why."""

from __future__ import annotations

import re
from pathlib import Path

from tests.server.conftest import Server
from tests.server.helpers import local_document


def _signed_in_page(server: Server, doc: dict[str, object]) -> str:
    server.client.post("/api/v1/runs", json=doc,
                       headers={"Authorization": f"Bearer {server.tokens['A-write']}"})  # fmt: skip
    server.client.post("/login", data={"token": server.tokens["A-read"]}, follow_redirects=False)
    record = doc["record"]
    assert isinstance(record, dict)
    page = server.client.get(f"/runs/{record['id']}")
    assert page.status_code == 200
    return page.text


def test_market_embodied_water_and_flops_stand_beside_location_based(
    server: Server, tmp_path: Path
) -> None:
    doc = local_document(tmp_path)
    record = doc["record"]
    record["carbon_market"] = {
        "status": "ok", "kg": 0.05, "method": "market-based", "uncertainty_rel": 0.2,
        "basis": "certificates 80 % (GO 2024), location-based factor for the rest",
        "offsets_kg": 0.1,
    }  # fmt: skip
    record["embodied"] = {"status": "ok", "kg": 0.012, "method": "amortized",
                          "uncertainty_rel": 0.37, "formula": "device-hours × kg ÷ lifetime"}
    record["water"] = {"status": "ok", "litres": 2.5, "onsite_l": 0.5, "offsite_l": 2.0,
                       "wue_l_per_kwh": 0.18, "wue_source": "AWS fleet WUE",
                       "offsite_source": "DE generation mix", "method": "estimated",
                       "uncertainty_rel": 0.4}  # fmt: skip
    record["flops"] = {"status": "ok", "flops": 3.2e15, "method": "counted", "mfu": 0.41,
                       "peak_source": "A100 dense bf16 (datasheet)", "flops_per_j": 2.5e11,
                       "uncertainty_rel": 0.02}  # fmt: skip
    html = _signed_in_page(server, doc)
    section = re.sub(r"<[^>]+>", "", html.split("Footprint beyond location-based carbon", 1)[1])
    assert "CO2eq, location-based" in section and "250 g" in section
    assert "CO2eq, market-based" in section and "50.0 g" in section
    assert "certificates 80 %" in section and "never" in section  # offsets never subtracted
    assert "12.0 g" in section and "device-hours" in section
    assert "2.5 L" in section and "AWS fleet WUE" in section
    assert "3.2e+15" in section and "MFU 41" in section


def test_a_record_without_the_blocks_says_why(server: Server, tmp_path: Path) -> None:
    html = _signed_in_page(server, local_document(tmp_path, kg=None))
    section = html.split("Footprint beyond location-based carbon", 1)[1]
    assert section.count("unknown") >= 3 and "not counted" in section
