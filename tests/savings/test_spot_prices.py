"""The spot item prices long on-demand jobs from the user's export first; money over years."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.savings.plan import plan_savings
from tests.run_records import record


def _long_on_demand(n: int) -> dict:
    r = record(3.6e7, gpu_j=3.0e7, run_id=f"{n:012x}")
    r["started_at"] = f"2026-10-0{n}T00:00:00+00:00"
    r["duration_s"] = 5 * 3600.0
    r["cost"]["instance"] = {"usd": 5 * 1.861, "hours": 5.0, "usd_per_h": 1.861,
                             "pricing": "on-demand", "provider": "aws",
                             "instance_type": "g6e.xlarge", "region": "us-east-1"}  # fmt: skip
    r["cost"]["usd"] += 5 * 1.861
    return r


def test_spot_is_priced_from_the_export_with_its_source(tmp_path: Path) -> None:
    records = [_long_on_demand(n) for n in (1, 2)]
    packaged = plan_savings(records, lambda _id: [])
    export = tmp_path / "spot.json"
    export.write_text(json.dumps({"SpotPriceHistory": [
        {"AvailabilityZone": "us-east-1a", "InstanceType": "g6e.xlarge", "SpotPrice": "1.50",
         "Timestamp": "2026-11-20T00:00:00Z"}]}))  # fmt: skip
    dearer = plan_savings(records, lambda _id: [], instance_prices=export, escalation=0.05,
                          years=2)  # fmt: skip
    spot_a = next(i for i in packaged.items if i.id == "spot").candidate
    spot_b = next(i for i in dearer.items if i.id == "spot").candidate
    assert spot_a.usd is not None and spot_b.usd is not None
    # the same jobs: (1.861 − 0.7945) vs (1.861 − 1.50) per hour
    assert spot_b.usd / spot_a.usd == pytest.approx((1.861 - 1.50) / (1.861 - 0.7945))
    assert "1 AWS spot price(s) in spot.json" in spot_b.method and spot_b.co2_g == 0
    data = dearer.to_dict()
    item = next(i for i in data["items"] if i["id"] == "spot")
    assert item["usd_over_years"] == pytest.approx(item["marginal_usd_per_year"] * 2.05)
