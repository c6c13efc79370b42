"""Docs search from the site opened from disk: Material's offline plugin, the iframe-worker
shim served by the site itself (docs/hooks/offline_search.py), driven in real Chromium
over file:// with the network blocked; and scripts/check_offline_search.py on that site.

A two-page site is built with the same theme, plugins and hook as mkdocs.yml (the
whole site takes ~35 s; `make docs` runs the script on it).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.report.browser import find_chromium

ROOT = Path(__file__).resolve().parents[2]
SHIM = ROOT / "docs" / "assets" / "javascripts" / "iframe-worker-shim.js"

pytestmark = pytest.mark.slow


def test_the_real_config_has_the_offline_plugin_and_the_hook() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config["plugins"]]
    assert "search" in plugins and "offline" in plugins
    assert "docs/hooks/offline_search.py" in config["hooks"]
    assert SHIM.is_file() and "iframe-worker" in SHIM.read_text()[:200]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    docs = root / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "assets" / "javascripts").mkdir(parents=True)
    shutil.copy(SHIM, docs / "assets" / "javascripts" / SHIM.name)
    (docs / "index.md").write_text("# Home\n\nSee the [guide](guide/imports.md).\n")
    (docs / "guide" / "imports.md").write_text(
        "# Imports\n\nCarbontracker logs come in with greenml import carbontracker.\n")
    (root / "mkdocs.yml").write_text(yaml.safe_dump({
        "site_name": "t", "docs_dir": "docs", "site_dir": "site",
        "theme": {"name": "material", "font": False},
        "hooks": [str(ROOT / "docs" / "hooks" / "offline_search.py")],
        "plugins": ["search", "offline"],
    }))  # fmt: skip
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q"], cwd=root,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return root / "site"


def test_check_script_passes_on_the_built_site(site: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_offline_search.py"),
                           str(site)], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no network script" in done.stdout
    nested = (site / "guide" / "imports.html").read_text()
    assert '../assets/javascripts/iframe-worker-shim.js' in nested and "unpkg.com" not in nested


def test_check_script_fails_a_site_that_loads_the_shim_from_the_network(
    site: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "site"
    shutil.copytree(site, broken)
    page = broken / "index.html"
    page.write_text(page.read_text().replace("assets/javascripts/iframe-worker-shim.js",
                                             "https://unpkg.com/iframe-worker/shim"))  # fmt: skip
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_offline_search.py"),
                           str(broken)], capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 1 and "loads a script from the network" in done.stderr


def test_search_answers_in_chromium_from_disk_with_no_network(site: Path) -> None:
    chromium = find_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            context = browser.new_context()
            context.route("http*://**/*", lambda route: route.abort())  # offline
            page = context.new_page()
            page.goto((site / "guide" / "imports.html").as_uri())
            page.keyboard.press("/")  # Material's search shortcut
            page.keyboard.type("carbontracker")
            result = page.locator(".md-search-result__item").first
            result.wait_for(timeout=15_000)
            assert "Imports" in result.inner_text()
        finally:
            browser.close()
