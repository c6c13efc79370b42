"""Settings a user repeats: declared once; option > environment > file > default.

See :mod:`greenml.config.settings`; ``greenml config show`` prints every
effective value and where it came from.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "SETTINGS": "greenml.config.settings",
    "Setting": "greenml.config.settings",
    "effective": "greenml.config.settings",
    "setting": "greenml.config.settings",
}

__all__ = ["SETTINGS", "Setting", "effective", "setting"]

if TYPE_CHECKING:
    from greenml.config.settings import SETTINGS, Setting, effective, setting


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
