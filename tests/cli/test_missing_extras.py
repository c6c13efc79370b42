"""Every feature behind an extra fails with one line naming ``pip install 'greenml[…]'``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.errors import MissingExtra


def test_the_default_embedder_without_torch_names_the_embeddings_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from greenml.serve.embeddings import MiniLMEmbedder

    monkeypatch.setitem(sys.modules, "torch", None)  # as if not installed
    with pytest.raises(MissingExtra, match=r"pip install 'greenml\[embeddings\]'"):
        MiniLMEmbedder()(["hello"])


def test_compress_without_torch_is_one_line_naming_the_torch_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "model.py"
    script.write_text("import torch\n")
    monkeypatch.setitem(sys.modules, "torch", None)
    assert main(["compress", f"{script}:make"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install 'greenml[torch]'" in err


@pytest.mark.parametrize(
    ("body", "said"),
    [("def make():\n    raise RuntimeError('no GPU here')\n", "make() raised RuntimeError: no GPU"),
     ("raise ImportError('broken module')\n", "raised ImportError: broken module")],
)  # fmt: skip
def test_batch_curve_with_a_failing_factory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, said: str
) -> None:
    script = tmp_path / "model.py"
    script.write_text(body)
    assert main(["inference", "batch-curve", f"{script}:make"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err


def test_a_missing_tracker_names_its_extra_from_greenml_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.delitem(sys.modules, "wandb", raising=False)

    def without_wandb(name: str, *args: object) -> object:
        return None if name == "wandb" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_wandb)
    code = main(["run", "--db", str(tmp_path / "r.db"), "--log-to", "wandb", "--", "true"])
    assert code == 2 and "pip install 'greenml[wandb]'" in capsys.readouterr().err
