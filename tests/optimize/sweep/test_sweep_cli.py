"""``greenml optimize sweep`` as a user runs it: the table, --json, --json-out, the example,
bad input, and the old spellings (``greenml sweep``, ``-o``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from greenml.cli import main

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "sweep_digits.py"

TINY = """
import torch
from greenml.optimize.sweep.run import TrainStep

def make_step(config):
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(config.batch_size, 4), torch.randint(0, 2, (config.batch_size,))
    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return config.batch_size, loss.detach()
    return TrainStep(step, model)
"""
FAST = ["--steps", "3", "--seconds", "0", "--warmup", "1", "--device", "cpu"]


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def tiny(tmp_path: Path) -> str:
    path = tmp_path / "tiny_sweep_cli.py"
    path.write_text(TINY)
    return f"{path}:make_step"


def test_the_table_shows_every_configuration_and_the_picks(
    tiny: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["optimize", "sweep", tiny, "--precision", "fp32,tf32,bf16", "--batch-size", "8,16",
                 *FAST])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    for text in ("precision", "J/sample", "samples/s", "loss vs fp32", "method", "P_max"):
        assert text in out, text
    assert out.count("skipped") == 2 + 2  # two rows, two footnotes
    assert "tf32 b8 eager w0 skipped: tf32 is a mode of NVIDIA tensor cores" in out
    assert "recommended: least η·E + (1−η)·P_max·T per sample" in out
    assert "ref" in out  # fp32 is the loss reference
    assert "[5/6] tf32 b16 eager w0 …" in err and "[6/6] bf16 b16" in err  # progress goes to stderr


def test_json_and_json_out_file_hold_the_same_results(
    tiny: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "results.json"
    code = main(["optimize", "sweep", tiny, "--precision", "fp32,bf16", "--eta", "0.5", "--json",
                 "--json-out", str(target), *FAST])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert json.loads(target.read_text()) == data
    assert [c["status"] for c in data["configs"]] == ["ok", "ok"]
    assert all(c["steps"] == 3 and c["samples"] == 3 * 32 for c in data["configs"])
    assert data["configs"][1]["autocast"] == "forward"
    assert [r["eta"] for r in data["recommendations"]] == [0.5]
    assert data["loss_checks"][0]["config"] == "bf16 b32 eager w0"
    assert data["max_power_w"] > 0 and data["max_power_source"]


def test_the_digits_example_sweeps_precision_and_workers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["optimize", "sweep", f"{EXAMPLE}:make_step", "--precision", "fp32,bf16",
                 "--batch-size", "64", "--workers", "0,1", "--json", *FAST])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert [c["status"] for c in data["configs"]] == ["ok"] * 4, data["configs"]
    assert {c["config"]["workers"] for c in data["configs"]} == {0, 1}
    losses = [c["loss_mean"] for c in data["configs"]]
    assert all(1.0 < loss < 3.0 for loss in losses)  # ~ln(10) at the start of training
    assert {c["status"] for c in data["loss_checks"]} == {"ok"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--precision", "fp8"], "unknown precision 'fp8'"),
        (["--batch-size", ","], "--batch-size is empty"),
        (["--batch-size", "0"], "--batch-size: 0 is below 1"),
        (["--workers", "two"], "--workers: 'two' is not a whole number"),
        (["--compile", "maybe"], "--compile takes on and/or off"),
        (["--eta", "2"], "eta must be between 0 and 1"),
        (["--loss-tolerance", "x"], "--loss-tolerance must be a percentage"),
        (["--steps", "0"], "measured steps must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tiny: str, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["optimize", "sweep", tiny, "--device", "cpu", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("greenml: error: ") and message in err
    assert err.count("\n") == 1


def test_a_missing_factory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "no_factory_here.py"
    path.write_text("x = 1\n")
    assert main(["optimize", "sweep", f"{path}:make_step", "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "has no 'make_step'" in err and err.count("\n") == 1


def test_help_lists_the_knobs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["optimize", "sweep", "--help"]) == 0
    out = capsys.readouterr().out
    for option in ("--precision", "--batch-size", "--compile", "--workers", "--warmup", "--steps",
                   "--seconds", "--eta", "--json", "--json-out", "TrainStep"):  # fmt: skip
        assert option in out, option


def test_the_old_spellings_still_work_and_say_the_new_ones(
    tiny: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "results.json"
    code = main(["sweep", tiny, "--precision", "fp32", "--batch-size", "8", "-o", str(target),
                 *FAST])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "greenml: `greenml sweep` is now `greenml optimize sweep`\n" in err
    assert "greenml: -o/--output FILE is now --json-out FILE\n" in err
    assert json.loads(target.read_text())["configs"][0]["status"] == "ok"
    assert "J/sample" in out
