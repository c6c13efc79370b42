"""The dashboard as a team lead uses it, in real headless Chromium: sort, search and save
filters on the runs table, cross-run charts in readable units, an N-way comparison with
the gate's verdict per pair, tables that break lines between words only, and axe-core's
accessibility check on every page (no serious or critical violation)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from greenml.store import access, open_store
from tests.report.browser import find_chromium
from tests.server.axe import axe_source, blocking, violations
from tests.server.dashboard_site import load, varied_runs
from tests.server.live import LiveServer, free_port

pytest.importorskip("uvicorn")
RUNS = 12


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("lead")
    db = f"sqlite:///{tmp / 'server.db'}"
    with open_store(db) as store:
        token = access.create_token(store, "vision", "read")
        pid = access.ensure_project(store, "vision")
        load(store, pid, varied_runs(tmp, RUNS))
    server = LiveServer(db, free_port(), tmp / "server.log").start()
    yield {"url": server.url, "token": token, "tmp": tmp}
    server.stop()


@pytest.fixture(scope="module")
def page(site: dict[str, Any]) -> Iterator[Any]:
    chromium = find_chromium()
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        tab = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
        tab.goto(site["url"] + "/login")
        tab.fill("input[name=token]", site["token"])
        tab.click("button[type=submit]")
        tab.wait_for_url("**/runs")
        yield tab
        browser.close()


def _ids(page: Any) -> list[str]:
    return [t.strip() for t in page.locator("tbody td:first-child .id").all_inner_texts()]


def _go(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("load")


def test_sort_search_and_saved_filters(page: Any, site: dict[str, Any]) -> None:
    _go(page, site["url"] + "/runs")
    assert _ids(page)[:2] == [f"run{RUNS - 1:04d}", f"run{RUNS - 2:04d}"]  # newest first
    page.click("th[data-sort=cost] a")  # most expensive first
    page.wait_for_url("**sort=cost**")
    assert _ids(page)[0] == f"run{RUNS - 1:04d}"
    assert page.locator("th[data-sort=cost]").get_attribute("aria-sort") == "descending"
    page.click("th[data-sort=cost] a")  # again: cheapest first
    page.wait_for_url("**order=asc**")
    assert _ids(page)[:3] == ["run0000", "run0001", "run0002"]
    page.fill("input[name=q]", "bert carol")  # every word must match
    page.click("form.filters button")
    page.wait_for_url("**q=bert+carol**")
    found = _ids(page)
    assert found == ["run0004", "run0010"], found  # bert: k % 3 == 1; carol: k // 2 % 3 == 2
    row = page.locator("tbody tr").first.inner_text()
    assert "4002 on gpu-node-00" in row and "carol" in row and "team=nlp" in row
    assert not re.search(r"\d[eE]-?\d", row) and " %" in row  # no exponent; measured share
    page.fill("input[name=filter]", "bert by carol")
    page.click("text=Save filter")
    page.wait_for_load_state("load")
    assert page.locator(".saved a", has_text="bert by carol").count() == 1, page.content()[:3000]
    _go(page, site["url"] + "/runs")
    assert len(_ids(page)) == RUNS
    page.click(".saved >> text=bert by carol")
    page.wait_for_load_state("load")
    assert _ids(page) == found and "order=asc" in page.url
    page.click("button[aria-label='delete bert by carol']")
    page.wait_for_load_state("load")
    assert page.locator(".saved a", has_text="bert by carol").count() == 0


def test_words_are_never_broken_across_lines(page: Any, site: dict[str, Any]) -> None:
    page.set_viewport_size({"width": 700, "height": 900})
    try:
        for path in ("/runs", "/project", "/compare?item=run0001&item=team%3Dvision"):
            _go(page, site["url"] + path)
            broken = page.evaluate("""() => {
              const out = [];
              for (const cell of document.querySelectorAll('td, th')) {
                const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                  for (const m of node.data.matchAll(/\\S+/g)) {
                    const r = document.createRange();
                    r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length);
                    const tops = new Set([...r.getClientRects()].map(b => Math.round(b.top)));
                    if (tops.size > 1) out.push(m[0]);
                  }
                }
              }
              return out;
            }""")
            assert broken == [], (path, broken[:5])
            multi = page.evaluate("() => [...document.querySelectorAll('td')].filter("
                                  "td => td.getClientRects()[0]?.height > 40).length")
            assert path != "/runs" or multi > 0, "long cells do wrap (between words)"
    finally:
        page.set_viewport_size({"width": 1100, "height": 900})


def test_charts_read_in_quantities_units(page: Any, site: dict[str, Any]) -> None:
    for query in ("", "?by=user", "?by=tag&key=team"):
        _go(page, site["url"] + "/charts" + query)
        figures = page.locator("figure.greenml-figure[data-kind=stacked-bars]")
        assert figures.count() == 3, query
        texts = page.locator("figure svg text").all_text_contents()
        assert not [t for t in texts if re.search(r"\d[eE][-+]?\d", t)], texts
        assert {"kJ", "g", "µUSD"} <= set(texts), texts  # each axis in the unit that fits
    assert page.locator("#work-samples svg path, #work-samples svg polyline").count() >= 1
    legend = page.locator("#chart-energy_j svg text").all_text_contents()
    assert "nlp" in legend and "vision" in legend


def test_compare_eight_items_gives_a_verdict_per_pair(page: Any, site: dict[str, Any]) -> None:
    items = [f"run{k:04d}" for k in range(6)] + ["team=vision", "team=nlp"]
    _go(page, site["url"] + "/compare?" + "&".join(f"item={i.replace('=', '%3D')}"
                                                   for i in items))  # fmt: skip
    outcomes = page.locator("[data-outcome]").evaluate_all(
        "els => els.filter(e => e.tagName === 'SPAN').map(e => e.dataset.outcome)")
    assert len(outcomes) == 8 * 7 // 2
    assert set(outcomes) <= {"pass", "fail", "inconclusive"} and "fail" in outcomes
    assert page.locator("p.verdict").count() == 7  # each item against the baseline
    assert page.locator("#compare-energy svg rect").count() >= 8
    _go(page, site["url"] + "/compare?" + "&".join(f"item=run{k:04d}" for k in range(9)))
    assert "at most 8" in page.locator(".error").inner_text()


PAGES = ("/runs", "/runs?sort=energy&order=asc&q=vision", "/runs/run0003", "/project",
         "/charts", "/charts?by=tag&key=team", "/compare",
         "/compare?item=run0001&item=run0002&item=team%3Dvision", "/jobs", "/jobs/4001",
         "/serving", "/runs/no-such-run")  # fmt: skip


def test_axe_finds_no_serious_violation_on_any_page(page: Any, site: dict[str, Any]) -> None:
    source = axe_source()
    problems = {}
    for path in PAGES:
        _go(page, site["url"] + path)
        found = blocking(violations(page, source))
        if found:
            problems[path] = found
    context = page.context.browser.new_context()
    login = context.new_page()
    login.goto(site["url"] + "/login")
    if found := blocking(violations(login, source)):
        problems["/login"] = found
    context.close()
    assert problems == {}
    _go(page, site["url"] + "/runs")
    page.evaluate("(() => { const l = document.querySelector('form.filters label');"
                  " const i = l.querySelector('input'); i.removeAttribute('placeholder');"
                  " l.replaceWith(i); })()")  # axe does see an input without a label
    assert any(v["id"] == "label" for v in blocking(violations(page, source)))
