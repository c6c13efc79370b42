"""Check that a built docs site searches when opened from disk (``make docs`` runs it).

    python scripts/check_offline_search.py site

Checks: the search index ships as ``search/search_index.js`` (Material's offline
plugin) and indexes every page; no page loads a script from the network; every
script a page loads exists in the site; links are to ``.html`` files (a directory
URL does not open from disk). Prints one line per failure and exits 1, else one
line with the counts.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_SCRIPT = re.compile(r'<script[^>]*\bsrc="([^"]+)"')
_PREFIX = "var __index = "


def problems(site: Path) -> tuple[list[str], int, int]:
    """(failures, pages, indexed documents) of the site in ``site``."""
    found: list[str] = []
    index_file = site / "search" / "search_index.js"
    docs = 0
    if not index_file.is_file():
        return [f"{index_file} is missing (is the offline plugin on?)"], 0, 0
    text = index_file.read_text(encoding="utf-8")
    if not text.startswith(_PREFIX):
        found.append(f"{index_file} does not start with {_PREFIX!r}")
    else:
        index = json.loads(text[len(_PREFIX):].rstrip().rstrip(";"))
        locations = {d["location"].split("#")[0] for d in index["docs"]}
        docs = len(index["docs"])
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")
    for page in pages:
        html = page.read_text(encoding="utf-8")
        rel = page.relative_to(site).as_posix()
        if "__index" in text and rel not in locations and "reference/api" not in rel:
            found.append(f"{rel} is not in the search index")
        for src in _SCRIPT.findall(html):
            if "://" in src or src.startswith("//"):
                found.append(f"{rel} loads a script from the network: {src}")
            elif not (page.parent / src.split("?")[0]).resolve().is_file():
                found.append(f"{rel} loads a script that is not in the site: {src}")
        for href in re.findall(r'<a[^>]*\bhref="([^":#?]+/)"', html):
            found.append(f"{rel} links to a directory ({href}), which does not open from disk")
            break
    return found, len(pages), docs


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "site")
    found, pages, docs = problems(site)
    for line in found:
        print(f"offline search: {line}", file=sys.stderr)
    if not found:
        print(f"offline search: {pages} pages, {docs} indexed sections, no network script")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
