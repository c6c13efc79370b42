"""The runs table's sort and search and the per-day charts as SQL on SQLite and PostgreSQL:
the same answers from both databases."""

from __future__ import annotations

import re
from pathlib import Path

from tests.server.conftest import Server
from tests.server.dashboard_site import varied_runs


def test_sort_search_and_charts_on_every_database(server: Server, tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {server.tokens['A-write']}"}
    for doc in varied_runs(tmp_path, 6):
        assert server.client.post("/api/v1/runs", json=doc, headers=headers).status_code == 201

    def ids(url: str) -> list[str]:
        page = server.client.get(url, headers=headers)
        assert page.status_code == 200, page.text[:300]
        return re.findall(r'<span class="muted id">(run\d{4})</span>', page.text)

    assert ids("/runs?sort=cost&order=asc") == [f"run{k:04d}" for k in range(6)]
    assert ids("/runs?sort=measured")[0].startswith("run")
    assert ids("/runs?q=GPU-NODE-01") == ["run0005", "run0001"]  # any case, newest first
    assert ids("/runs?q=bert%20nlp&sort=energy") == ["run0004"]
    for query, legend in (("", "bert-base pretraining"), ("?by=user", "carol"),
                          ("?by=tag&key=team", "vision")):  # fmt: skip
        page = server.client.get("/charts" + query, headers=headers)
        assert page.status_code == 200 and page.text.count('data-kind="stacked-bars"') == 3
        assert legend in page.text and "µUSD" in page.text, query
    keyless = server.client.get("/charts?by=tag", headers=headers)
    assert keyless.status_code == 200 and "Name the tag key" in keyless.text
    assert server.client.get("/charts?by=team", headers=headers).status_code == 400
