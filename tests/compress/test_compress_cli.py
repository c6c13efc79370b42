"""``greenml compress`` as a user runs it: a factory script, the table, --json, --plot, errors."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.compress.factory import load_spec
from greenml.errors import ConfigError

FACTORY = textwrap.dedent(
    '''
    import torch
    from torch import nn

    def build():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 3))
        x = torch.randn(48, 32)
        labels = model(x).argmax(dim=1)  # the model is right by construction

        def evaluate(predict):
            return float((predict(x).argmax(dim=1) == labels).float().mean()) * 100

        return {"model": model, "evaluate": evaluate, "example_inputs": x[:8]}

    def broken():
        raise RuntimeError("no weights here")

    def incomplete():
        return {"model": None}
    '''
)
FAST = ["--rounds", "1", "--repeats", "2", "--min-window", "0.05", "--threads", "1"]


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "factory_mod.py"
    path.write_text(FACTORY)
    return path


def test_json_and_plot(script: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plot = tmp_path / "pareto.svg"
    code = main(["compress", f"{script}:build", "--technique", "int8,sparse24", *FAST,
                 "--plot", str(plot), "--json"])  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    rows = {v["name"]: v for v in data["variants"]}
    assert list(rows) == ["baseline", "int8", "sparse24"]
    assert rows["baseline"]["accuracy_pct"] == 100.0
    assert rows["int8"]["size_bytes"] < rows["baseline"]["size_bytes"]
    assert rows["sparse24"]["status"] == "skipped"
    assert rows["baseline"]["energy_method"] in ("counter", "power-integrated", "estimated")
    assert data["measurement"]["threads"] == 1
    assert data["plot"] == str(plot)
    ET.parse(plot)  # well-formed
    assert "greenml ▸ building int8" in out.err  # progress goes to stderr, not into the JSON


def test_the_table(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compress", f"{script}:build", "--technique", "int8", *FAST,
                 "--max-accuracy-drop", "0.5"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    for text in ("baseline", "int8", "energy/1k inf.", "recommendation:", "budget −0.5 pp",
                 "meter:"):  # fmt: skip
        assert text in out, text


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("{script}:broken", "broken() raised RuntimeError: no weights here"),
        ("{script}:incomplete", "missing: model, evaluate, example_inputs"),
        ("{script}:nothing", "has no attribute 'nothing'"),
        ("{script}", "expected SCRIPT.py:FACTORY"),
        ("missing_dir/nope.py:build", "no such script"),
        ("greenml_no_such_module:build", "no module named 'greenml_no_such_module'"),
    ],
)
def test_bad_targets_are_one_line_errors(
    script: Path, target: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compress", target.format(script=script), *FAST]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2  # the progress line, then the error; no traceback
    assert err[1].startswith("greenml: error: ") and message in err[1]


def test_bad_options_fail_before_measuring(script: Path, capsys: pytest.CaptureFixture[str]
                                           ) -> None:  # fmt: skip
    assert main(["compress", f"{script}:build", "--technique", "int9"]) == 2
    assert "unknown technique 'int9'" in capsys.readouterr().err
    assert main(["compress", f"{script}:build", "--rounds", "0"]) == 2
    assert "rounds must be at least 1" in capsys.readouterr().err
    assert main(["compress", f"{script}:build", "--plot", "/no/such/dir/p.svg"]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_help_documents_the_factory_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compress", "--help"]) == 0
    out = capsys.readouterr().out
    for text in ("example_inputs", "evaluate(predict)", "train_data", "--max-accuracy-drop"):
        assert text in out


def test_a_dotted_module_target(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(script.parent)
    monkeypatch.syspath_prepend(str(script.parent))
    spec = load_spec("factory_mod:build")
    assert spec.example_inputs.shape == (8, 32)
    assert spec.train_data is None and spec.student is None
    with pytest.raises(ConfigError, match="not callable"):
        load_spec("factory_mod:torch")  # a module, not a function
