"""Find the user's ``make_step`` factory from ``path/to/train.py:make_step`` or ``pkg.mod:fn``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from greenml.errors import ConfigError

DEFAULT_FACTORY = "make_step"


def split_target(target: str) -> tuple[str, str]:
    """``"train.py:make_step"`` → ``("train.py", "make_step")``; the name defaults to make_step."""
    text = target.strip()
    if not text:
        raise ConfigError("no factory given: use path/to/train.py:make_step or package.module:fn")
    where, sep, name = text.rpartition(":")
    if not sep or "/" in name or "\\" in name:  # "train.py" or "C:\dir\train.py"
        return text, DEFAULT_FACTORY
    if not where or not name.isidentifier():
        raise ConfigError(f"{target!r} is not FILE_OR_MODULE:FUNCTION (e.g. train.py:make_step)")
    return where, name


def load_factory(target: str) -> Any:
    """The callable named by ``target``.

    A target ending in ``.py`` or naming an existing file is loaded as a
    script (its folder goes first on ``sys.path``, as ``python script.py``
    would do); anything else is imported as a module.

    Raises:
        ConfigError: The file or module cannot be imported, or has no such callable.
    """
    where, name = split_target(target)
    path = Path(where)
    is_file = where.endswith(".py") or path.is_file()
    module = _load_file(path) if is_file else _import_module(where)
    factory = getattr(module, name, None)
    if factory is None:
        raise ConfigError(f"{where} has no {name!r}: define def {name}(config): ... in it")
    if not callable(factory):
        raise ConfigError(f"{where}:{name} is a {type(factory).__name__}, not a function")
    return factory


def _load_file(path: Path) -> Any:
    if not path.is_file():
        raise ConfigError(f"no such file: {path}")
    resolved = path.resolve()
    # Named after the file when that name is free: loader workers started by
    # "spawn" re-import the module by name (the folder is on sys.path).
    module_name = resolved.stem
    if not module_name.isidentifier() or module_name in sys.modules:
        module_name = f"greenml_sweep_{module_name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot load {path} as Python")
    module = importlib.util.module_from_spec(spec)
    folder = str(resolved.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ConfigError(f"importing {path} failed: {_first_line(exc)}") from exc
    return module


def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and name.startswith(exc.name):
            raise ConfigError(
                f"no module named {name!r} (and no file of that name); "
                "use path/to/train.py:make_step or package.module:make_step"
            ) from exc
        raise ConfigError(f"importing {name} failed: {_first_line(exc)}") from exc
    except Exception as exc:
        raise ConfigError(f"importing {name} failed: {_first_line(exc)}") from exc


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0].strip()}" if lines else type(exc).__name__
