"""axe-core (the npm package, installed by `make test` under .venv/npm) run inside a page.

The script is read from disk and evaluated in the page through the DevTools protocol
(the dashboard's Content-Security-Policy forbids script tags, not the test driver).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE_PATHS = (Path(os.environ.get("GREENML_AXE_JS", "/nonexistent")),
             ROOT / ".venv/npm/node_modules/axe-core/axe.min.js")  # fmt: skip
BLOCKING = ("serious", "critical")


def axe_source() -> str:
    """The text of axe.min.js; fails under CI when missing, skips elsewhere."""
    for path in AXE_PATHS:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    message = "axe-core not installed: `make test` installs it (npm package axe-core)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def violations(page: Any, source: str) -> list[dict[str, Any]]:
    """axe's violations of the page as loaded (WCAG 2.x A and AA, and best practices)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(source)
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".map(v => ({id: v.id, impact: v.impact, help: v.help,"
        " nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))"
    )
    return found


def blocking(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The serious and critical ones."""
    return [v for v in found if v["impact"] in BLOCKING]
