"""``greenml report`` in-process: formats, kinds, options, and one-line errors with exit 2."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

import greenml.cli.app as app
from greenml.cli import main
from greenml.report import kinds
from greenml.store import open_store
from tests.report.builders import T0, make_run


@pytest.fixture(autouse=True)
def reachable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The command registered (the lead adds it to app.COMMANDS), and an empty spool."""
    monkeypatch.setitem(app.COMMANDS, "report", "greenml.cli.report:report")
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.delenv("GREENML_DB", raising=False)


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'greenml.db'}"


@pytest.fixture
def runs(db: str) -> list[str]:
    with open_store(db) as store:
        return [
            make_run(store, tags={"search": "lr"}, name="lr=1e-3"),
            make_run(store, start=T0 + 3600, tags={"search": "lr"}, carbon="unknown"),
        ]


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["report", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_statement_markdown_by_default(
    runs: list[str], db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = report(capsys, runs[0][:6], "--db", db)
    assert code == 0, err
    assert out.startswith("# Carbon Impact Statement")
    assert "880 g CO2eq (±26 %)" in out


def test_tag_json_parses_with_data_keys(
    runs: list[str], db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = report(capsys, "--tag", "search=lr", "--format", "json", "--db", db)
    assert code == 0, err
    data = json.loads(out)
    assert data["runs"] == runs
    assert data["data"]["carbon_known_runs"] == 1
    assert data["data"]["co2eq_kg"] == pytest.approx(0.88)


def test_kinds_with_their_options_to_a_file(
    runs: list[str], db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "ai-act.md"
    args = ["--tag", "search=lr", "--kind", "euaiact", "--model", "m-1", "--flops", "2e20"]
    code, out, err = report(capsys, *args, "-o", str(out_file), "--db", db)
    assert (code, out) == (0, "")
    assert err == f"greenml: wrote {out_file} ({out_file.stat().st_size:,} bytes)\n"  # one line
    text = out_file.read_text(encoding="utf-8")
    assert "2.0 × 10^20" in text and "Article 53(5)" in text
    args = [runs[0], "--kind", "sci", "--per", "1000 inferences", "--units", "250,000"]
    code, out, err = report(capsys, *args, "--format", "json", "--db", db)
    assert code == 0, err
    assert json.loads(out)["data"]["sci_g_per_unit"] == pytest.approx(3.62559, rel=1e-4)


def test_provider_name_and_its_old_spelling(
    runs: list[str], db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--tag", "search=lr", "--kind", "euaiact", "--model", "m-1", "--db", db]
    code, new, err = report(capsys, *args, "--provider-name", "ACME Labs")
    assert (code, err) == (0, "") and "ACME Labs" in new
    code, old, err = report(capsys, *args, "--provider", "ACME Labs")
    assert code == 0 and err == "greenml: --provider is now --provider-name\n"
    assert old.count("ACME Labs") == new.count("ACME Labs") > 0


def test_html_goes_through_render_html(
    runs: list[str], db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = types.ModuleType("greenml.report.html")
    fake.render_html = lambda r: f"<html><h1>{r.title}</h1></html>"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "greenml.report.html", fake)
    code, out, err = report(capsys, runs[0], "--format", "html", "--db", db)
    assert code == 0, err
    assert out == "<html><h1>Carbon Impact Statement</h1></html>\n"


def test_text_options_reach_other_kinds(
    runs: list[str], db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = types.ModuleType("greenml_fake_kind")
    seen: dict[str, object] = {}

    def build(
        runs: object, *, task_class: str, baseline: list[str], queries: float = 1.0
    ) -> object:
        seen.update(task_class=task_class, baseline=baseline, queries=queries)
        from greenml.report.model import Report

        return Report("fake", "Fake", [], {}, [], "2024-05-01T00:00:00+00:00")

    build.__annotations__.update(baseline="Sequence[str]", queries="float")
    module.build = build  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "greenml_fake_kind", module)
    monkeypatch.setitem(kinds.KINDS, "label", "greenml_fake_kind:build")
    args = [
        runs[0],
        "--kind",
        "label",
        "-O",
        "task_class=qa",
        "-O",
        "baseline=a,b",
        "-O",
        "queries=5",
    ]
    code, _out, err = report(capsys, *args, "--db", db)
    assert code == 0, err
    assert seen == {"task_class": "qa", "baseline": ["a", "b"], "queries": 5.0}
    code, _out, err = report(capsys, runs[0], "--kind", "label", "--db", db)
    assert code == 2
    assert err == "greenml: error: greenml report label needs --task-class, --baseline\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ffffffff"], "no run matches 'ffffffff'"),
        (["--tag", "search=none"], "no runs carry the tag search=none"),
        ([], "no runs given: pass run ids or --tag KEY=VALUE"),
        (["--tag", "nokey"], "tag 'nokey' is not of the form key=value"),
        (["RUN", "--kind", "sci", "--per", "token", "--units", "lots"], "--units must be a number"),
        (["RUN", "--kind", "sci", "--per", "token"], "needs --units: how many token"),
        (["RUN", "--kind", "sci", "--units", "0"], "--units must be a positive number"),
        (["RUN", "--kind", "sci", "--flops", "1e20"], "No such option '--flops'"),
        (["RUN", "--model", "x"], "No such option '--model'"),
        (["RUN", "-O", "model=x"], "--model does not apply to greenml report statement"),
        (["RUN", "--kind", "savings", "-O", "oops"], "-O 'oops' is not of the form key=value"),
        (["RUN", "--kind", "nope"], "No such command 'nope'"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    runs: list[str], db: str, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    args = [runs[0] if a == "RUN" else a for a in args]
    code, out, err = report(capsys, *args, "--db", db)
    assert code == (3 if "no run matches" in message else 2)  # not found is 3 (issue 28)
    assert out == ""
    assert err.startswith("greenml: error: ") and err.count("\n") == 1
    assert message in err


def test_kind_not_available_yet(
    runs: list[str], db: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(kinds.KINDS, "savings", "greenml.report.no_such_kind:build")
    code, _out, err = report(capsys, runs[0], "--kind", "savings", "--db", db)
    assert code == 2
    assert "report kind 'savings' is not available yet (greenml.report.no_such_kind)" in err


def test_each_kind_is_a_subcommand_with_typed_options_and_the_old_form_still_works(
    runs: list[str], db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    new = report(capsys, "sci", runs[0], "--per", "1000 inferences", "--units", "250,000",
                 "--format", "json", "--db", db)  # fmt: skip
    old = report(capsys, runs[0], "--kind", "sci", "--per", "1000 inferences", "--units",
                 "250000", "--format", "json", "--db", db)  # fmt: skip
    assert new[0] == old[0] == 0, new[2] + old[2]
    drop = ("generated_at", "created_at")
    assert {k: v for k, v in json.loads(new[1])["data"].items() if k not in drop} == {
        k: v for k, v in json.loads(old[1])["data"].items() if k not in drop}
    code, _out, err = report(capsys, "euaiact", runs[0], "--per", "token", "--db", db)
    assert code == 2 and "No such option '--per'" in err  # another kind's option is refused
    code, out, _err = report(capsys, "--help")
    assert code == 0 and all(k in out for k in ("statement", "euaiact", "sci", "label",
                                                 "savings", "audit"))  # fmt: skip
