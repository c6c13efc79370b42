"""Lazy exports: a package's public names, imported from their modules on first use.

``import greenml`` stays fast because a package's face names what it offers
without importing it. Every package does it the same way::

    _LAZY = {"Meter": "greenml.measure.meter"}
    __getattr__ = lazy_exports(__name__, _LAZY)

with the same names under ``if TYPE_CHECKING:`` for type checkers. A name is
imported once, then kept in the package's namespace.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each name of ``exports`` from its module.

    Args:
        package: The package's ``__name__``.
        exports: Public name → the module that defines it (under that name).
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # imported once
        return value

    return __getattr__
