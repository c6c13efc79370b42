"""The package's version, in a module of its own (as httpx's ``__version__.py``).

Inner layers import it from here, never from the package face (``greenml/__init__``),
so no module below the face has to load it.
"""

from __future__ import annotations

__version__ = "0.1.0"
