"""``greenml check --explain``: the sides' environment blocks diffed, culprits first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from greenml.cli.app import cli
from greenml.record.run_record import RunRecord
from greenml.report.explain import explain
from tests.run_records import record


def _env(numpy: str = "1.26.4", commit: str = "a" * 40, dirty: bool = False,
         driver: str = "550.54", torch: str | None = None) -> dict[str, Any]:  # fmt: skip
    dists = {"numpy": numpy, "requests": "2.32.0"} | ({"torch": torch} if torch else {})
    return {
        "greenml_version": "0.9.0",
        "packages": {"count": len(dists), "sha256": "0" * 64, "distributions": dists},
        "git": {"commit": commit, "dirty": dirty, "branch": "main"},
        "gpu": {"driver_version": driver, "cuda_driver_version": "12.4",
                "gpus": [{"index": 0, "name": "NVIDIA H100", "power_limit_w": 700.0}]},
        "cpu": {"model": "AMD EPYC 9654", "logical_cores": 192},
    }  # fmt: skip


def _run(energy_j: float, **env: Any) -> dict[str, Any]:
    return record(energy_j, gpu_j=energy_j * 0.8) | {"environment": _env(**env)}


def test_a_package_bump_and_a_commit_are_named_framework_first() -> None:
    base = [RunRecord.from_dict(_run(100.0)), RunRecord.from_dict(_run(101.0))]
    cand = [RunRecord.from_dict(_run(130.0, numpy="2.0.0", commit="b" * 40, torch="2.3.0"))] * 2
    lines = [c.line() for c in explain(base, cand).changes]
    assert lines == [
        "framework numpy: 1.26.4 → 2.0.0",
        "framework torch: absent → 2.3.0",
        "git commit: aaaaaaaaaaaa → bbbbbbbbbbbb",
    ]


def test_runs_that_disagree_within_a_side_are_shown_as_such() -> None:
    base = [RunRecord.from_dict(_run(100.0, driver="550.54")),
            RunRecord.from_dict(_run(100.0, driver="535.1"))]  # fmt: skip
    cand = [RunRecord.from_dict(_run(120.0, driver="560.2"))]
    (change,) = explain(base, cand).changes
    assert change.kind == "driver"
    assert change.before == "535.1 | 550.54 (the side's runs differ)"
    assert change.after == "560.2"


def test_no_difference_says_so_and_a_missing_environment_is_noted() -> None:
    same = explain([RunRecord.from_dict(_run(1.0))], [RunRecord.from_dict(_run(2.0))])
    assert same.changes == ()
    assert "Nothing differs" in same.lines()[0]
    bare = RunRecord.from_dict(record(2.0) | {"environment": {}})
    missing = explain([RunRecord.from_dict(_run(1.0))], [bare])
    assert any("without a captured environment" in n for n in missing.notes)


def test_check_explain_prints_the_changes_beside_the_verdict(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    cand = tmp_path / "cand.json"
    base.write_text(json.dumps([_run(100.0), _run(101.0)]))
    cand.write_text(json.dumps([_run(150.0, numpy="2.0.0"), _run(151.0, numpy="2.0.0")]))
    out = CliRunner().invoke(cli, ["check", "-b", str(base), "-c", str(cand), "--explain"])
    assert out.exit_code == 1, out.output
    assert out.output.splitlines()[0].startswith("greenml check: FAIL")
    assert "  framework numpy: 1.26.4 → 2.0.0" in out.output.splitlines()
    as_json = CliRunner().invoke(
        cli, ["check", "-b", str(base), "-c", str(cand), "--explain", "--json"]
    )
    data = json.loads(as_json.output)
    assert data["outcome"] == "fail"
    assert data["explain"]["changes"] == [
        {"kind": "framework", "what": "numpy", "before": "1.26.4", "after": "2.0.0"}
    ]


_versions = st.text(st.sampled_from("0123456789.abrc"), min_size=1, max_size=8)
_dists = st.dictionaries(st.sampled_from(["numpy", "torch", "pandas", "x"]), _versions)


@given(before=_dists, after=_dists)
def test_exactly_the_packages_that_differ_are_named(
    before: dict[str, str], after: dict[str, str]
) -> None:
    def rec(dists: dict[str, str]) -> RunRecord:
        env = {"packages": {"distributions": dists}}
        return RunRecord.from_dict(record(1.0) | {"environment": env})

    named = {c.what for c in explain([rec(before)], [rec(after)]).changes}
    assert named == {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
