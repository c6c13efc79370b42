"""Search from the site opened from disk, with no network.

Material's ``offline`` plugin ships the search index as a script and loads the
``iframe-worker`` shim (web workers cannot start from ``file://``) from unpkg.com;
this hook points that script tag at the copy in ``docs/assets/javascripts/``
(iframe-worker 1.0.4 from the npm registry, MIT), so nothing is fetched.
"""

from __future__ import annotations

from typing import Any

SHIM_URL = "https://unpkg.com/iframe-worker/shim"
SHIM_FILE = "assets/javascripts/iframe-worker-shim.js"


def on_post_page(output: str, page: Any, config: Any) -> str:
    """The page's HTML with the shim loaded from the site itself."""
    from mkdocs.utils import get_relative_url

    if SHIM_URL not in output:
        return output
    return output.replace(SHIM_URL, get_relative_url(SHIM_FILE, page.url))
