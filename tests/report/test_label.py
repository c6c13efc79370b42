"""Energy label: the packaged reference set, band edges, clamping, queries and energy scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from greenml.errors import ConfigError
from greenml.report import label
from greenml.report.label_reference import REFERENCE_FILE, bands, load_reference, stars_for
from tests.run_records import record

SOURCES = Path(label.__file__).parents[1] / "data" / "SOURCES.md"


@pytest.fixture
def ref_csv(tmp_path: Path) -> Path:
    """A reference with round numbers: range 1–11 Wh, bands 2 Wh wide (edges 3, 5, 7, 9)."""
    path = tmp_path / "my_reference_v7.csv"
    path.write_text(
        "task_class,model,wh_per_1000_queries,gpu,source\n"
        "toy,small,1,H100,test\n"
        "toy,medium,4,H100,test\n"
        "toy,large,11,H100,test\n"
        "flat,a,2,H100,test\n"
        "flat,b,2,H100,test\n"
    )
    return path


def runs_at(wh_per_1000: float, n: int = 1, queries: int = 1000, **kw: Any) -> list[dict[str, Any]]:
    """Runs whose GPU energy is exactly ``wh_per_1000`` Wh per 1,000 queries."""
    gpu_j = wh_per_1000 * 3600 * queries / 1000
    tags = {"queries": str(queries)}
    return [record(gpu_j * 1.5, gpu_j=gpu_j, tags=tags, **kw) for _ in range(n)]


def test_packaged_reference_is_versioned_and_cited() -> None:
    ref = load_reference()
    assert ref.name == REFERENCE_FILE
    assert ref.version == "v1"
    assert {"object_detection", "text_classification"} <= set(ref.task_classes())
    for row in ref.models:
        assert row.wh_per_1000_queries > 0
        assert row.gpu == "NVIDIA H100 80GB"
        assert "AI Energy Score" in row.source and "@" in row.source
    text = SOURCES.read_text(encoding="utf-8")
    assert "## `label_reference_v1.csv`" in text
    assert "097117bc2a426abb025fe5a29e3380122f5bd167" in text
    assert "Partial" in text


def test_packaged_values_are_the_source_kwh_times_1000() -> None:
    rows = {m.model: m.wh_per_1000_queries for m in load_reference().of("object_detection")}
    assert rows["hustvl/yolos-tiny"] == pytest.approx(0.0010041655533324701 * 1000)
    assert rows["hustvl/yolos-base"] == pytest.approx(0.007980927134736682 * 1000)


def test_bands_are_five_equal_widths() -> None:
    got = bands(1.0, 11.0)
    assert [b.stars for b in got] == [5, 4, 3, 2, 1]
    assert [(b.low_wh, b.high_wh) for b in got] == [
        (1.0, 3.0), (3.0, 5.0), (5.0, 7.0), (7.0, 9.0), (9.0, 11.0),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("value", "stars"),
    [
        (1.0, 5),  # the minimum: most efficient band
        (2.999, 5),
        (3.0, 4),  # a band includes its lower edge
        (4.999, 4),
        (5.0, 3),
        (7.0, 2),
        (8.999, 2),
        (9.0, 1),
        (11.0, 1),  # the maximum: band 1, not clamped
    ],
)
def test_band_placement_at_edges(value: float, stars: int) -> None:
    assert stars_for(value, 1.0, 11.0) == (stars, None)


def test_clamping_outside_the_range() -> None:
    assert stars_for(0.5, 1.0, 11.0) == (5, "below")
    assert stars_for(11.01, 1.0, 11.0) == (1, "above")


def test_label_from_records_edge_values(ref_csv: Path) -> None:
    for value, stars in ((3.0, 4), (2.9, 5), (9.0, 1), (1.0, 5), (11.0, 1)):
        report = label.build(runs_at(value), task_class="toy", reference=ref_csv)
        assert report.data["stars"] == stars, value
        assert report.data["clamped"] is None
        assert report.data["wh_per_1000_queries"] == pytest.approx(value)


def test_label_report_names_reference_and_version(ref_csv: Path) -> None:
    report = label.build(runs_at(4.0, n=2), task_class="toy", reference=ref_csv)
    assert report.kind == "label"
    assert report.title == "Energy label: 4 of 5 stars (toy)"
    text = "\n".join(report.sections[0].paragraphs)
    assert "★★★★☆ 4 of 5 stars for toy: 4.00 ± 0.20 Wh per 1,000 queries" in text
    assert "mean of 2 runs" in text
    assert "Reference set my_reference_v7.csv (version v7)" in text
    assert "a reference file given by the user" in text
    assert "NVIDIA A100" in text and "not like-for-like" in text
    assert report.data["reference"]["version"] == "v7"
    assert report.data["reference"]["min_wh_per_1000_queries"] == 1.0
    assert report.data["stars_within_uncertainty"] == [4, 4]
    bands_table = report.sections[0].tables[0]
    assert bands_table.rows[1][-1] == "◀ these runs"


def test_clamped_values_say_so(ref_csv: Path) -> None:
    low = label.build(runs_at(0.5), task_class="toy", reference=ref_csv)
    assert (low.data["stars"], low.data["clamped"]) == (5, "below")
    assert "below the reference range (minimum 1.00 Wh): clamped to 5 stars" in " ".join(
        low.sections[0].paragraphs
    )
    high = label.build(runs_at(20.0), task_class="toy", reference=ref_csv)
    assert (high.data["stars"], high.data["clamped"]) == (1, "above")
    assert "above the reference range (maximum 11.0 Wh): clamped to 1 star" in " ".join(
        high.sections[0].paragraphs
    )


def test_uncertainty_spanning_two_bands(ref_csv: Path) -> None:
    report = label.build(runs_at(3.1, rel=0.10), task_class="toy", reference=ref_csv)
    assert report.data["stars"] == 4
    assert report.data["stars_within_uncertainty"] == [4, 5]
    assert "spans 4 to 5 stars" in " ".join(report.sections[0].paragraphs)


def test_queries_option_overrides_tags(ref_csv: Path) -> None:
    runs = runs_at(4.0, queries=1000)  # 14,400 J of GPU energy
    report = label.build(runs, task_class="toy", queries="2000", reference=ref_csv)
    assert report.data["wh_per_1000_queries"] == pytest.approx(2.0)


def test_generic_work_tag_in_queries(ref_csv: Path) -> None:
    run = record(10_000.0, gpu_j=7200.0, tags={"work": "1000", "work_unit": "query"})
    assert label.build([run], task_class="toy", reference=ref_csv).data[
        "wh_per_1000_queries"
    ] == pytest.approx(2.0)


def test_missing_queries_gpu_or_class_are_errors(ref_csv: Path) -> None:
    untagged = record(100.0, gpu_j=50.0, run_id="nq0000000001")
    with pytest.raises(ConfigError, match="run nq0000000001 states no number of queries"):
        label.build([untagged], task_class="toy", reference=ref_csv)
    cpu_only = record(100.0, tags={"queries": "10"}, run_id="cpu000000001")
    with pytest.raises(ConfigError, match=r"no GPU energy.*--energy-scope total"):
        label.build([cpu_only], task_class="toy", reference=ref_csv)
    with pytest.raises(ConfigError, match=r"'nope' is not in the reference set.*toy"):
        label.build(runs_at(2.0), task_class="nope", reference=ref_csv)
    with pytest.raises(ConfigError, match="no range"):
        label.build(runs_at(2.0), task_class="flat", reference=ref_csv)
    with pytest.raises(ConfigError, match="only completed runs"):
        label.build(runs_at(2.0, status="failed"), task_class="toy", reference=ref_csv)
    with pytest.raises(ConfigError, match="no runs"):
        label.build([], task_class="toy", reference=ref_csv)


def test_total_scope_is_labelled(ref_csv: Path) -> None:
    run = record(7200.0, tags={"queries": "1000"})
    report = label.build([run], task_class="toy", energy_scope="total", reference=ref_csv)
    assert report.data["wh_per_1000_queries"] == pytest.approx(2.0)
    assert "this label counts all components" in " ".join(report.sections[0].paragraphs)


def test_packaged_class_and_runset_like_input() -> None:
    class Runs:
        records = runs_at(2.5)

    report = label.build(Runs(), task_class="object_detection")
    assert report.data["stars"] == 4  # yolos-tiny 1.00 … yolos-base 7.98: band 4 is 2.40–3.79
    assert report.data["reference"]["name"] == "label_reference_v1.csv"
    assert "AI Energy Score leaderboard data (v0)" in " ".join(report.sections[0].paragraphs)
    figure = report.sections[1].figures[0]
    assert figure.kind == "bars"
    names = figure.series[0].x
    assert names[-1] == "these runs" and len(set(names)) == len(names)
    assert figure.error[figure.series[0].name][-1] > 0


def test_real_runset_when_available() -> None:
    runset = pytest.importorskip("greenml.report.runset")
    report = label.build(runset.RunSet(runs_at(2.5)), task_class="object_detection")
    assert report.data["stars"] == 4


def test_malformed_reference(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("task_class,model,wh_per_1000_queries,gpu,source\ntoy,a,-1,H100,x\n")
    with pytest.raises(ConfigError, match="line 2"):
        load_reference(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_reference(tmp_path / "missing.csv")
