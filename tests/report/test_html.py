"""The HTML report: self-contained, escaped, every figure kind drawn, and rendered by Chromium."""

from __future__ import annotations

import math
import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

import greenml
from greenml.report.html import render_html
from greenml.report.model import Figure, Report, Section, Series, Table
from greenml.report.svg import PALETTE
from greenml.report.ticks import format_error, format_value, time_ticks, value_ticks
from tests.report.browser import dump_dom, find_chromium, png_pixels, screenshot

EVIL = "<script>document.title='pwned'</script>"
EVIL_IMG = "<img src=x onerror=\"document.title='pwned'\">"
TITLE = f"Energy statement {EVIL}"
T0 = 1_700_002_800  # 2023-11-14 23:00 UTC
HOUR = 3600


def sample_report() -> Report:
    """Every figure kind, a table, and hostile names in a title, a cell, a series, a label."""
    hours = [T0 + i * HOUR for i in range(25)]
    intensity = [300 + 150 * math.sin(i / 24 * 2 * math.pi) for i in range(25)]
    minutes = [T0 + i * 60 for i in range(2000)]  # dense: drawn decimated, without markers
    power = [250 + 50 * math.sin(i / 50) + i % 97 for i in range(2000)]
    runs = ["train-a", EVIL, "eval"]
    figures = [
        Figure("line", "Grid carbon intensity during the run",
               [Series("DE hourly", hours, intensity),
                Series(EVIL, hours, [v * 0.7 for v in intensity])],
               x_label="Time", y_label="Intensity (g/kWh)"),
        Figure("line", "GPU power", [Series("gpu0", minutes, power)], y_label="Power (W)"),
        Figure("bars", "Energy per run", [Series("energy", runs, [4.21, 6.02, 2.17])],
               y_label="Energy (kWh)", error={"energy": [0.2, 0.3, 0.1]}),
        Figure("stacked-bars", "Energy by component",
               [Series("GPU", runs, [3.1, 4.5, 1.2]), Series("CPU", runs, [0.8, 1.1, 0.7]),
                Series(EVIL_IMG, runs, [0.31, 0.42, 0.27])],
               y_label="Energy (kWh)", error={"GPU": [0.15, 0.2, 0.05]}),
        Figure("pie", "Share of energy",
               [Series("components", ["GPU", "CPU", EVIL], [8.8, 2.6, 1.0])],
               y_label="Energy (kWh)", error={"components": [0.4, 0.1, 0.05]}),
    ]  # fmt: skip
    table = Table(
        ["Run", "Id", "Energy (kWh)", "Carbon (kg CO2eq)"],
        [
            ["train-a", "1dd8f4fb13d0", "4.21 ± 0.2", "1.05"],
            [EVIL_IMG, "8157adb32f47", "6.02", "1.51"],
            ["eval", "0c4e7d2a9b11", "2.17", "—"],
        ],
        title="Runs",
        note=f"Source: {EVIL}",
    )
    section = Section(f"Summary {EVIL}", ["Three runs used 12.4 kWh.", EVIL], [table], figures)
    return Report(
        kind="statement",
        title=TITLE,
        sections=[section, Section("Empty", figures=[Figure("line", "Nothing", [])])],
        data={},
        runs=["run-1", EVIL_IMG],
        generated_at="2024-05-01T12:00:00+00:00",
    )


class Elements(HTMLParser):
    """Every start tag with its attributes, and the document's text, as a browser parses it."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self._in_title = False
        self.title = ""
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_title = tag == "title" and self.title == ""

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_title:
            self.title += data

    def named(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.tags if name == tag]


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(sample_report())


def test_the_page_is_a_complete_accessible_document(page: str) -> None:
    doc = Elements(page)
    assert page.startswith("<!DOCTYPE html>")
    assert doc.named("html") == [{"lang": "en"}]
    assert {"charset": "utf-8"} in doc.named("meta")
    assert doc.title == TITLE
    assert "@media print" in page
    for svg in doc.named("svg"):
        assert svg["role"] == "img"
        title_id, desc_id = svg["aria-labelledby"].split()
        assert f'<title id="{title_id}">' in page and f'<desc id="{desc_id}">' in page


def test_nothing_is_fetched_from_anywhere(page: str) -> None:
    doc = Elements(page)
    tags = {name for name, _ in doc.tags}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "image", "use"}
    for tag, attrs in doc.tags:
        for key in ("src", "href", "xlink:href", "action", "poster", "data"):
            assert attrs.get(key, "#").startswith("#"), f"<{tag} {key}={attrs[key]!r}>"
    style = "".join(s for s in re.findall(r"<style>(.*?)</style>", page, re.S))
    assert "url(" not in style and "@import" not in style
    assert "http://" not in page and "https://" not in page


def test_every_text_from_the_report_is_escaped(page: str) -> None:
    doc = Elements(page)
    assert EVIL not in page and EVIL_IMG not in page
    assert not any(k.startswith("on") for _, attrs in doc.tags for k in attrs)
    text = "".join(doc.text)
    # as text in the heading, a paragraph, a table cell, a note, a bar label, a legend, the footer
    assert text.count(EVIL) >= 5
    assert text.count(EVIL_IMG) >= 3
    series = [a["data-series"] for a in doc.named("g") if "data-series" in a]
    assert EVIL in series


def test_each_figure_is_one_svg_found_by_its_kind(page: str) -> None:
    figures = re.findall(r'<figure class="greenml-figure" data-kind="([a-z-]+)"', page)
    assert Counter(figures) == {"line": 3, "bars": 1, "stacked-bars": 1, "pie": 1}
    assert page.count('<svg class="greenml-chart"') == len(figures) == 6
    assert "No data" in page  # the empty figure says so


def test_lines_have_a_utc_time_axis_and_a_legend(page: str) -> None:
    doc = Elements(page)
    text = "\n".join(doc.text)
    assert "Time (UTC)" in text and "Intensity (g/kWh)" in text
    assert "2023-11-15" in text  # the date under the first tick of the day
    assert re.search(r"\b06:00\b", text)
    lines = [a for a in doc.named("path") if a.get("fill") == "none" and "stroke-dasharray" in a]
    assert len(lines) == 3
    dense = max(lines, key=lambda a: len(a["d"]))
    assert dense["d"].count("L") < 1500  # 2,000 points decimated to pixel columns
    assert len(doc.named("circle")) == 2 * 25  # markers only on the sparse series


def test_bars_carry_error_bars_and_pies_shares(page: str) -> None:
    doc = Elements(page)
    errors = [a for a in doc.named("path") if a.get("class") == "error-bar"]
    assert len(errors) == 3 + 3  # three bars, three GPU segments
    shares = [t for t in doc.text if re.fullmatch(r"\d+%", t)]
    assert sum(int(s[:-1]) for s in shares) in (99, 100, 101)
    assert "8.80 ± 0.40  (71.0%)" in doc.text


def test_tables_align_numbers_and_the_footer_names_version_and_runs(page: str) -> None:
    assert '<th scope="col" class="num">Energy (kWh)</th>' in page
    assert '<td class="num">4.21 ± 0.2</td>' in page
    assert "<td>1dd8f4fb13d0</td>" in page  # an id that starts with a digit is not a number
    footer = page[page.index("<footer>") :]
    assert greenml.__version__ in footer and "2024-05-01 12:00:00 UTC" in footer
    assert "run-1" in footer and "Runs covered (2)" in footer


def test_ticks_are_round_and_times_are_utc() -> None:
    assert value_ticks(0, 523) == [0, 100, 200, 300, 400, 500, 600]
    assert value_ticks(0, 0.9) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert format_value(2500.0, 500.0) == "2,500" and format_value(0.25, 0.25) == "0.25"
    assert [format_error(e) for e in (0.4, 0.05, 12.5, 1234.0)] == ["0.40", "0.050", "12", "1,234"]
    ticks, labels = time_ticks(T0, T0 + 6 * HOUR)
    assert labels[:3] == ["23:00\n2023-11-14", "00:00\n2023-11-15", "01:00"]
    assert all(t % HOUR == 0 for t in ticks)
    _, days = time_ticks(T0, T0 + 30 * 86_400.0)
    assert days[:2] == ["2023-11-20", "2023-11-27"]  # Mondays
    _, months = time_ticks(T0, T0 + 200 * 86_400.0)
    assert months[:3] == ["2024-01", "2024-03", "2024-05"]


def odd_figures() -> list[Figure]:
    """Edge cases a report may well produce."""
    many = [f"run-{i:02d}-with-a-rather-long-name" for i in range(50)]
    return [
        Figure("line", "One point", [Series("only", [T0], [12.0])]),
        Figure("line", "Gaps and no values", [Series("gappy", [T0, T0 + 60, T0 + 120],
               [1.0, math.nan, 3.0]), Series("empty", [], [])]),
        Figure("line", "Batch size sweep", [Series("J/sample", [8, 16, 32, 64], [3, 2, 1.5, 1.4])],
               x_label="Batch size"),
        Figure("bars", "Savings", [Series("saved", ["a", "b"], [-2.0, 5.0])],
               error={"saved": [0.5, math.nan]}),
        Figure("bars", "Fifty runs", [Series("kWh", many, [float(i) for i in range(50)])]),
        Figure("stacked-bars", "Mixed signs",
               [Series("up", ["a", "b"], [2.0, math.nan]), Series("down", ["a"], [-1.0])]),
        Figure("pie", "Zero", [Series("none", ["a", "b"], [0.0, 0.0])]),
        Figure("pie", "Twelve slices", [Series("s", [str(i) for i in range(12)], [1.0] * 12),
               Series("with a negative", ["x", "y"], [3.0, -1.0])]),
        Figure("pie", "Whole", [Series("all", ["only"], [4.0])]),
    ]  # fmt: skip


def test_odd_figures_are_drawn_or_say_why_not() -> None:
    report = Report("sci", "Odd", [Section("Odd", figures=odd_figures())], {}, [], "not a time")
    page = render_html(report)
    doc = Elements(page)
    assert len(doc.named("svg")) == len(odd_figures())
    assert doc.text.count("No data") == 1  # only the pie whose values are all zero
    assert "other (5)" in page and "1 negative or missing values not shown" in page
    assert "Batch size" in page and "(UTC)" not in page.split("Batch size sweep")[1][:3000]
    assert any("rotate(-35" in a.get("transform", "") for a in doc.named("text"))
    assert "not a time" in page and "0 runs" in page


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory, page: str) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def test_chromium_renders_the_charts_and_runs_no_injected_script(
    chromium: str, written: Path, tmp_path: Path
) -> None:
    shown = dump_dom(chromium, written, tmp_path / "profile")
    assert shown.console == []  # no error, no message at all: the page has no script
    doc = Elements(shown.dom)
    assert doc.title == TITLE  # the injected script would have set it to 'pwned'
    assert not doc.named("script") and not doc.named("img")
    assert len(doc.named("svg")) == 6
    assert len(doc.named("circle")) == 50 and len(doc.named("rect")) > 12


def test_the_checks_above_catch_a_script_that_runs(chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "bad.html"
    page.write_text(f"<!DOCTYPE html><title>ok</title>{EVIL}<script>console.error('x')</script>")
    shown = dump_dom(chromium, page, tmp_path / "profile")
    assert Elements(shown.dom).title == "pwned"
    assert len(shown.console) == 1


def test_chromium_paints_the_charts(chromium: str, written: Path, tmp_path: Path) -> None:
    png = tmp_path / "report.png"
    screenshot(chromium, written, tmp_path / "profile", png, "900,2600")
    width, height, rows = png_pixels(png)
    assert (width, height) == (900, 2600)
    colors: Counter[bytes] = Counter()
    for row in rows[::2]:
        colors.update(row[i : i + 3] for i in range(0, len(row), 3))
    ink = sum(n for c, n in colors.items() if min(c) < 200)
    assert ink > 10_000
    for hex_color in PALETTE[:3]:  # the first series' lines, bars and slices
        rgb = bytes.fromhex(hex_color[1:])
        assert colors[rgb] > 300, f"{hex_color} barely painted ({colors[rgb]} px)"
