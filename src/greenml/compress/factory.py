"""Load what ``greenml compress SCRIPT_OR_MODULE:FACTORY`` names, and check what it returns.

The factory is called without arguments and returns a dict or an object with:

- ``model``: a ``torch.nn.Module``;
- ``evaluate``: ``evaluate(predict) -> accuracy in percent``;
- ``example_inputs``: a tensor or a tuple of tensors (one batch);
- optionally ``train_data`` (``(inputs, labels)``) and ``student``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

REQUIRED = ("model", "evaluate", "example_inputs")
OPTIONAL = ("train_data", "student")


@dataclass
class CompressSpec:
    """What a factory returned."""

    model: Any
    evaluate: Any
    example_inputs: Any
    train_data: Any = None
    student: Any = None


def load_spec(target: str) -> CompressSpec:
    """Import ``SCRIPT.py:FACTORY`` or ``package.module:FACTORY``, call it, check the result.

    Raises:
        ConfigError: Bad target, missing file/module/attribute, a factory that
            raises, or a result without ``model``, ``evaluate`` and ``example_inputs``.
    """
    where, sep, name = target.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise ConfigError(
            f"expected SCRIPT.py:FACTORY or package.module:FACTORY, got {target!r}"
        )
    module = _load_module(where)
    factory = getattr(module, name, None)
    if factory is None:
        raise ConfigError(f"{where} has no attribute {name!r}")
    if not callable(factory):
        raise ConfigError(f"{where}:{name} is not callable")
    try:
        made = factory()
    except Exception as exc:
        raise ConfigError(f"{where}:{name}() raised {type(exc).__name__}: {exc}") from exc
    return _spec(made, f"{where}:{name}()")


def _load_module(where: str) -> Any:
    path = Path(where)
    if where.endswith(".py") or path.is_file():
        if not path.is_file():
            raise ConfigError(f"no such script: {where}")
        name = f"greenml_compress_target_{abs(hash(str(path.resolve())))}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"cannot load {where} as a Python script")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        folder = str(path.resolve().parent)
        if folder not in sys.path:  # the script's own imports, as ``python SCRIPT`` allows
            sys.path.insert(0, folder)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ConfigError(f"importing {where} raised {type(exc).__name__}: {exc}") from exc
        return module
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, "")  # like ``python -m``: modules in the current directory
    try:
        return importlib.import_module(where)
    except ModuleNotFoundError as exc:
        inner = "" if exc.name == where else f" ({exc})"  # else: one of its imports is missing
        raise ConfigError(f"no module named {where!r}{inner}") from exc
    except Exception as exc:
        raise ConfigError(f"importing {where} raised {type(exc).__name__}: {exc}") from exc


def _spec(made: Any, origin: str) -> CompressSpec:
    def get(key: str) -> Any:
        if isinstance(made, dict):
            return made.get(key)
        return getattr(made, key, None)

    missing = [key for key in REQUIRED if get(key) is None]
    if missing:
        raise ConfigError(
            f"{origin} must return a dict or object with model, evaluate and example_inputs; "
            f"missing: {', '.join(missing)}"
        )
    return CompressSpec(*(get(key) for key in REQUIRED + OPTIONAL))
