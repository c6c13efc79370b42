"""The data files greenml ships, each cited with its source and date in ``SOURCES.md``.

Found beside this module (greenml is always installed unpacked), so that reading one
costs an ``open``, not the import of :mod:`importlib.resources` on every command.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["packaged"]

_HERE = Path(__file__).resolve().parent


def packaged(*parts: str) -> Path:
    """The path of a packaged data file (or folder): ``packaged("gpus.csv")``."""
    return _HERE.joinpath(*parts)
