"""Loading runs for a report and their totals: energy, uncertainty, carbon, hours, hardware."""

from __future__ import annotations

import math

import pytest

from greenml.errors import ConfigError, RunNotFound, StoreError
from greenml.report import records
from greenml.report.runset import RunSet, load_runs
from greenml.store.repository import Store
from tests.report.builders import H100, KWH, T0, db_url, make_run, store

__all__ = ["db_url", "store"]


def two_runs(store: Store) -> tuple[str, str]:
    """Two A100s for an hour (carbon known) and one H100 for half an hour (carbon unknown)."""
    a = make_run(store, tags={"search": "lr"})
    b = make_run(
        store,
        devices=[("gpu", "gpu0", H100, 1.0 * KWH, "counter", 0.05)],
        start=T0 + 7200,
        duration_s=1800,
        tags={"search": "lr"},
        carbon="unknown",
        price=None,
    )
    return a, b


def test_totals_combine_uncertainties_by_source(store: Store) -> None:
    a, b = two_runs(store)
    runs = load_runs(store, [a, b])
    # run a: 2 GPUs × 0.9 kWh (±5 %, correlated: add) and a CPU 0.2 kWh (±30 %), in quadrature
    a_unc = math.hypot(2 * 0.9 * 0.05, 0.2 * 0.3)
    assert runs.it_energy.value == pytest.approx(3.0 * KWH)
    # runs a and b were measured by different devices: independent, in quadrature
    # (greenml.measure.combine; runs of one setup add linearly, see tests/jobs)
    assert runs.it_energy.uncertainty == pytest.approx(math.hypot(a_unc, 0.05) * KWH)
    # facility: run a at PUE 1.1; run b has no PUE (no carbon, no cost): counted at 1.0, said
    assert runs.facility_energy.value == pytest.approx((2.2 + 1.0) * KWH)
    assert runs.facility_energy.uncertainty == pytest.approx(math.hypot(a_unc * 1.1, 0.05) * KWH)
    pues = {p["source"]: (p["pue"], p["runs"]) for p in runs.pues}
    assert pues["given by the user"] == (1.1, [a])
    assert pues[records.NO_PUE] == (1.0, [b])


def test_unknown_carbon_is_listed_not_zeroed(store: Store) -> None:
    a, b = two_runs(store)
    runs = load_runs(store, [b, a])
    assert runs.ids == [a, b]  # oldest first, whatever the order given
    assert runs.carbon.value == pytest.approx(2.2 * 0.4)
    assert runs.carbon.known == [a]
    assert [m.run_id for m in runs.carbon.missing] == [b]
    assert runs.carbon.missing[0].status == "unknown"
    assert "no location given" in runs.carbon.missing[0].reason
    assert runs.carbon.coverage() == "known for 1 of 2 runs"
    rel = math.hypot(math.hypot(0.09, 0.06) / 2.0, 0.25)
    assert runs.carbon.uncertainty == pytest.approx(0.88 * rel)
    data = runs.to_dict()
    assert data["carbon_known_runs"] == 1
    assert data["carbon_missing"][0]["run_id"] == b
    assert runs.intensity_g_per_kwh() == pytest.approx(400.0)


def test_no_carbon_at_all_is_none_not_zero(store: Store) -> None:
    run = make_run(store, carbon="unavailable")
    data = load_runs(store, [run]).to_dict()
    assert data["co2eq_kg"] is None
    assert data["carbon_missing"][0]["status"] == "unavailable"
    assert "does not cover" in data["carbon_missing"][0]["reason"]


def test_hours_devices_methods_and_hardware(store: Store) -> None:
    a, b = two_runs(store)
    runs = load_runs(store, [a, b])
    assert runs.run_seconds == pytest.approx(5400)
    assert runs.span_s == pytest.approx(7200 + 1800)
    assert {d.name: (d.hours, d.max_count) for d in runs.devices.values()} == {
        "A100 SXM4 80GB": (pytest.approx(2.0), 2),
        "H100 SXM": (pytest.approx(0.5), 1),
    }
    assert runs.cpus == ["Intel(R) Xeon(R) Platinum 8480+"]
    shares = runs.method_shares()
    assert shares["counter"] == pytest.approx(2.8 / 3.0)
    assert shares["estimated"] == pytest.approx(0.2 / 3.0)
    assert runs.components["gpu"][0] == pytest.approx(2.8 * KWH)
    assert runs.to_dict()["device_hours"]["A100 SXM4 80GB"] == pytest.approx(2.0)


def test_tag_selects_all_runs_of_a_search(store: Store) -> None:
    a, b = two_runs(store)
    make_run(store, tags={"search": "other"})
    assert load_runs(store, tag={"search": "lr"}).ids == [a, b]
    assert load_runs(store, [a[:6]], tag={"search": "lr"}).ids == [a, b]  # union, no duplicates


def test_prefixes_and_errors(store: Store) -> None:
    a, _b = two_runs(store)
    assert load_runs(store, [a[:5]]).ids == [a]
    with pytest.raises(RunNotFound, match="no run matches 'ffffffff'"):
        load_runs(store, ["ffffffff"])
    with pytest.raises(ConfigError, match="no runs carry the tag search=none"):
        load_runs(store, tag={"search": "none"})
    with pytest.raises(ConfigError, match="no runs given"):
        load_runs(store)
    make_run(store, run_id="abc000000001")
    make_run(store, run_id="abc000000002")
    with pytest.raises(StoreError, match="ambiguous"):
        load_runs(store, ["abc"])


def test_run_without_energy_is_listed(store: Store) -> None:
    done = make_run(store)
    running = make_run(store, start=T0 + 4000, finish=False, status="running")
    runs = load_runs(store, [done, running])
    assert [m.run_id for m in runs.energy_unknown] == [running]
    assert runs.it_energy.coverage() == "known for 1 of 2 runs"
    assert runs.it_energy.value == pytest.approx(2.0 * KWH)


def test_runset_of_records_needs_no_store(store: Store) -> None:
    run = make_run(store)
    runs = RunSet([store.get_record(run)])
    assert runs.samples(run) == []
    assert runs.cost.value == pytest.approx(2.2 * 0.2)
