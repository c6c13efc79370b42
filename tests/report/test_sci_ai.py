"""SCI for AI provider units: per FLOP, training token and parameter; gross vs effective."""

from __future__ import annotations

import pytest

from greenml.errors import ConfigError
from greenml.report import sci
from greenml.report.runset import load_runs
from greenml.report.sci_ai import BOUNDARY, provider_units
from greenml.store.repository import Store
from tests.report.builders import T0, db_url, make_run  # noqa: F401 (db_url: a fixture)
from tests.report.builders import store as store  # the fixture


def test_gross_counts_every_run_effective_only_the_completed_ones(
    store: Store,
) -> None:
    done = make_run(store)
    failed = make_run(store, start=T0 + 7200, status="failed")
    report = sci.build(load_runs(store, [done, failed]), per="run", embodied_kg=0.0,
                       parameters=7e9, training_tokens=2e12)  # fmt: skip
    data = report.data["sci_ai"]
    total_g = report.data["o_g"] + report.data["m_g"]
    assert data["gross_g"] == pytest.approx(total_g)
    assert data["effective_g"] == pytest.approx(total_g / 2)  # two equal runs, one completed
    assert data["units"]["parameter"]["gross_g_per_unit"] == pytest.approx(total_g / 7e9)
    assert data["units"]["training token"]["effective_g_per_unit"] == pytest.approx(
        total_g / 2 / 2e12)
    assert data["units"]["FLOP"]["gross_g_per_unit"] is None  # no FLOPs blocks: unknown
    assert data["boundary"] == BOUNDARY
    (section,) = [s for s in report.sections if s.heading.startswith("SCI for AI")]
    assert "Boundary" in section.tables[0].note


def test_per_flop_from_the_runs_flops_blocks() -> None:
    records = [{"status": "completed", "carbon": {"kg": 1.0}, "flops": {"flops": 1e18}},
               {"status": "interrupted", "carbon": {"kg": 1.0}, "flops": {"flops": 3e18}}]
    _, data = provider_units(records, 2000.0, None, None)
    assert data["units"]["FLOP"]["gross_g_per_unit"] == pytest.approx(2000 / 4e18)
    assert data["units"]["FLOP"]["effective_g_per_unit"] == pytest.approx(1000 / 1e18)
    assert data["units"]["parameter"]["gross_g_per_unit"] is None


def test_a_nonpositive_count_is_refused() -> None:
    with pytest.raises(ConfigError, match="parameters must be a positive number"):
        provider_units([], 1.0, -5.0, None)
