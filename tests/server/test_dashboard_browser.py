"""The dashboard in real headless Chromium (Playwright driving the Debian ``chromium``):
sign in, filter, open a run, download a report, charts painted, no injected script runs,
and every page readable with JavaScript off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from greenml.store import access, open_store
from greenml.store.transfer import import_run
from tests.report.browser import find_chromium, png_pixels
from tests.server.helpers import local_document, renamed
from tests.server.live import LiveServer, free_port

pytest.importorskip("uvicorn")
EVIL_NAME = "<script>window.__pwned=1</script>"
EVIL_TAG = '"><img src=x onerror="window.__pwned=2">'


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("dash")
    db = f"sqlite:///{tmp / 'server.db'}"
    with open_store(db) as store:
        token = access.create_token(store, "vision", "read")
        pid = access.ensure_project(store, "vision")
        good = local_document(tmp, name="resnet", tags={"team": "vision"}, seconds=300, gpus=4)
        import_run(store, good, pid)
        import_run(store, renamed(good, "evil1", name=EVIL_NAME, tags={"x": EVIL_TAG},
                                  started_at="2024-05-08T12:00:00+00:00"), pid)  # fmt: skip
    server = LiveServer(db, free_port(), tmp / "server.log").start()
    yield {"url": server.url, "token": token, "run": good["record"]["id"], "tmp": tmp}
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium = find_chromium()
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield launched
        launched.close()


def _signed_in(browser: Any, site: dict[str, Any], **context: Any) -> Any:
    page = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True,
                               **context).new_page()  # fmt: skip
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    page.goto(site["url"] + "/runs")
    assert "Sign in" in page.content()  # no session: nothing shown but the way in
    page.goto(site["url"] + "/login")
    page.fill("input[name=token]", site["token"])
    page.click("button[type=submit]")
    page.wait_for_url("**/runs")
    page.wait_for_load_state("load")
    page.locator("tbody tr").first.wait_for()
    return page


def test_sign_in_filter_open_download_and_nothing_injected_runs(
    browser: Any, site: dict[str, Any]
) -> None:
    page = _signed_in(browser, site)
    rows = page.locator("tbody tr")
    assert rows.count() == 2
    assert page.locator("td", has_text=EVIL_NAME).count() == 1  # shown as text
    assert page.evaluate("window.__pwned") is None and page.dialogs == []
    page.fill("input[name=tag]", "team=vision")
    page.click("form.filters button")
    page.wait_for_url("**/runs?*tag=team*")
    page.wait_for_load_state("load")
    assert rows.count() == 1 and "resnet" in rows.first.inner_text()
    page.click(f"a[href='/runs/{site['run']}']")
    page.wait_for_url(f"**/runs/{site['run']}")
    page.wait_for_load_state("load")
    paths = page.locator("#power svg path, #power svg polyline")
    assert paths.count() >= 4  # one line per GPU
    page.screenshot(path=str(site["tmp"] / "run-page.png"), full_page=True)
    png = site["tmp"] / "power-figure.png"
    page.locator("#power").screenshot(path=str(png))
    width, height, rows_rgb = png_pixels(png)
    pixels = [row[i:i + 3] for row in rows_rgb for i in range(0, len(row), 3)]
    inked = sum(1 for p in pixels if p != b"\xff\xff\xff")
    assert inked > 0.02 * width * height, "the power chart is painted"
    assert len(set(pixels)) > 8, "several coloured lines, not a blank panel"
    with page.expect_download() as info:
        page.locator("tr", has_text="statement").locator("a", has_text="html").click()
    report = Path(info.value.path()).read_text(encoding="utf-8")
    assert report.startswith("<!DOCTYPE html>") and site["run"] in report
    page.goto(site["url"] + "/runs/evil1")
    assert EVIL_NAME in page.locator("h1").inner_text()
    page.goto(site["url"] + "/project")
    assert page.locator("figure svg").count() >= 2
    assert page.evaluate("window.__pwned") is None and page.dialogs == []


def test_pages_read_with_javascript_off(browser: Any, site: dict[str, Any]) -> None:
    page = _signed_in(browser, site, java_script_enabled=False)
    assert page.locator("tbody tr").count() == 2
    for path in (f"/runs/{site['run']}", "/project", f"/compare?a={site['run']}&b=evil1"):
        page.goto(site["url"] + path)
        assert page.locator("main h1").count() == 1, path
    assert "greenml check:" in page.locator(".verdict").inner_text()
    with page.expect_download() as info:
        page.goto(site["url"] + "/runs")
        page.click("text=Download these runs as CSV")
    csv_text = Path(info.value.path()).read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].startswith("id,name,status")
    assert len(csv_text.splitlines()) == 3
