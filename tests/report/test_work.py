"""Units of work from run tags: parsing, choosing a unit, runs whose units differ."""

from __future__ import annotations

import pytest

from greenml.errors import ConfigError
from greenml.report.work import (
    Work,
    amounts,
    common_unit,
    display_per,
    normalize_unit,
    per_label,
    work_of,
)
from tests.run_records import record


def run(run_id: str = "r1", **tags: str) -> dict[str, object]:
    return record(100.0, tags=tags, run_id=run_id)


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ({"samples": "50000"}, Work(50000, "samples", "tag samples=50000")),
        ({"tokens": "1.2e9"}, Work(1.2e9, "tokens", "tag tokens=1.2e9")),
        ({"queries": "1_000"}, Work(1000, "queries", "tag queries=1_000")),
        ({"images": "2,500"}, Work(2500, "images", "tag images=2,500")),
        (
            {"work": "1000", "work_unit": "queries"},
            Work(1000, "queries", "tag work=1000 (queries)"),
        ),
        ({"work": "7", "work_unit": "Query"}, Work(7, "queries", "tag work=7 (queries)")),
        ({"work": "7", "work_unit": "episodes"}, Work(7, "episodes", "tag work=7 (episodes)")),
        ({"work": "7"}, Work(7, "units", "tag work=7 (units)")),
    ],
)
def test_work_from_tags(tags: dict[str, str], expected: Work) -> None:
    assert work_of(run(**tags)) == expected


def test_no_work_tag_is_none() -> None:
    assert work_of(run(lr="3e-5")) is None


@pytest.mark.parametrize("value", ["abc", "0", "-5", "inf", "nan", ""])
def test_bad_amounts_name_the_run_and_tag(value: str) -> None:
    with pytest.raises(ConfigError, match=r"run bad1, tag samples"):
        work_of(run("bad1", samples=value))


def test_several_units_need_a_choice() -> None:
    both = run("both", samples="100", tokens="51200")
    with pytest.raises(ConfigError, match=r"run both .*samples, tokens.*--unit"):
        work_of(both)
    assert work_of(both, "tokens") == Work(51200, "tokens", "tag tokens=51200")
    assert work_of(both, "sample") == Work(100, "samples", "tag samples=100")
    assert work_of(both, "queries") is None


def test_generic_and_unit_tag_must_agree() -> None:
    assert work_of(run(samples="10", work="10", work_unit="samples")) is not None
    with pytest.raises(ConfigError, match="disagree"):
        work_of(run(samples="10", work="12", work_unit="samples"))


def test_common_unit_same_none_and_different() -> None:
    a, b = run("aaa", samples="10"), run("bbb", work="5", work_unit="sample")
    assert common_unit({"baseline": [a], "candidate": [b]}) == "samples"
    assert common_unit({"baseline": [run("ccc")], "candidate": [run("ddd")]}) is None
    tokens = run("eee", tokens="99")
    with pytest.raises(ConfigError, match=r"samples: baseline aaa.*tokens: candidate eee"):
        common_unit({"baseline": [a], "candidate": [tokens]})


def test_work_on_one_side_only_is_an_error_naming_the_runs() -> None:
    with pytest.raises(ConfigError, match=r"no unit of work: candidate fff"):
        common_unit({"baseline": [run("aaa", samples="10")], "candidate": [run("fff")]})


def test_amounts_require_the_unit() -> None:
    assert amounts([run(samples="10"), run(samples="30")], "samples") == [10.0, 30.0]
    with pytest.raises(ConfigError, match="states no work in samples"):
        amounts([run(tokens="10")], "samples")


def test_labels_and_display_scale() -> None:
    assert per_label("samples") == "per 1000 samples"
    assert per_label("tokens") == "per 1M tokens"
    assert per_label(None) == "per run"
    assert display_per("tokens") == 1e6
    assert display_per(None) == 1.0
    assert normalize_unit(" Images ") == "images"
    with pytest.raises(ConfigError):
        normalize_unit("  ")
