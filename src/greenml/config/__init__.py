"""Settings a user repeats: declared once; option > environment > file > default.

See :mod:`greenml.config.settings`; ``greenml config show`` prints every
effective value and where it came from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

_LAZY = {
    "SETTINGS": "greenml.config.settings",
    "Setting": "greenml.config.settings",
    "effective": "greenml.config.settings",
    "setting": "greenml.config.settings",
}

__all__ = ["SETTINGS", "Setting", "effective", "setting"]

if TYPE_CHECKING:
    from greenml.config.settings import SETTINGS, Setting, effective, setting


__getattr__ = lazy_exports(__name__, _LAZY)
