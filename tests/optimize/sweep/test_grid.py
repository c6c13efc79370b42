"""The sweep grid, and finding the user's factory from a file or module path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.optimize.sweep.grid import SweepConfig, SweepGrid, as_configs
from greenml.optimize.sweep.target import load_factory, split_target


def test_the_grid_is_the_product_of_its_axes_without_duplicates() -> None:
    grid = SweepGrid(("FP32", "bfloat16", "fp32"), (32, 64), (False, True), (0,))
    configs = grid.configs("cpu")
    assert len(configs) == 2 * 2 * 2
    assert configs[0] == SweepConfig("fp32", 32, False, 0, "cpu")
    assert configs[1].precision == "bf16" and configs[1].batch_size == 32
    assert configs[-1] == SweepConfig("bf16", 64, True, 0, "cpu")
    assert configs[-1].label == "bf16 b64 compiled w0"
    assert as_configs([configs[0], configs[0]], "cuda") == [configs[0].on("cuda")]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"precisions": ("fp8",)}, "unknown precision 'fp8'"),
        ({"precisions": ()}, "no precision value"),
        ({"batch_sizes": []}, "no batch size value"),
        ({"batch_sizes": (0,)}, "batch size must be at least 1"),
        ({"batch_sizes": (32.5,)}, "batch size must be an integer"),
        ({"workers": (-1,)}, "workers must be >= 0"),
        ({"compile": ()}, "no compile value"),
    ],
)
def test_bad_grids_are_config_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SweepGrid(**kwargs)  # type: ignore[arg-type]


def test_an_empty_list_of_configurations_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="empty"):
        as_configs([], "cpu")
    with pytest.raises(ConfigError, match="device must be"):
        SweepConfig(device="tpu")


FACTORY = "def make_step(config):\n    return lambda: config.batch_size\n\nother = 3\n"


def test_a_factory_loads_from_a_file_with_or_without_its_name(tmp_path: Path) -> None:
    path = tmp_path / "my_train_a.py"
    path.write_text(FACTORY)
    factory = load_factory(f"{path}:make_step")
    assert factory(SweepConfig(batch_size=7))() == 7
    assert load_factory(str(path)).__name__ == "make_step"  # the default name


def test_a_factory_loads_from_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "sweeppkg_b"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    factory = load_factory("sweeppkg_b.train:make_step")
    assert factory(SweepConfig(batch_size=3))() == 3
    sys.modules.pop("sweeppkg_b.train", None)
    sys.modules.pop("sweeppkg_b", None)


def test_factory_errors_are_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "my_train_c.py"
    path.write_text(FACTORY)
    broken = tmp_path / "my_broken_c.py"
    broken.write_text("import not_a_module_anywhere_x\n")
    cases = {
        f"{path}:missing": "has no 'missing'",
        f"{path}:other": "is a int, not a function",
        f"{tmp_path / 'nope.py'}:make_step": "no such file",
        "no_such_module_zz:make_step": "no module named 'no_such_module_zz'",
        f"{broken}:make_step": "importing .* failed: ModuleNotFoundError",
        "train.py:": "is not FILE_OR_MODULE:FUNCTION",
        " ": "no factory given",
    }
    for target, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            load_factory(target)


def test_split_target_handles_windows_paths() -> None:
    assert split_target("C:\\work\\train.py") == ("C:\\work\\train.py", "make_step")
    assert split_target("pkg.mod:build") == ("pkg.mod", "build")
