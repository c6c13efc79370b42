"""The runs table's query parameters and saved filters are outside input: any search text,
sort, order and offset gives a page or one clear error, never a 500; search matches every
word; a saved filter's name, whatever it holds, comes back escaped and deletes cleanly."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.store import access, open_store
from greenml.store.query_table import SORTS
from tests.server.dashboard_site import load, varied_runs

RUNS = 9


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    from greenml.server.app import create_app

    tmp: Path = tmp_path_factory.mktemp("table")
    db = f"sqlite:///{tmp / 'server.db'}"
    with open_store(db) as store:
        token = access.create_token(store, "vision", "read")
        load(store, access.ensure_project(store, "vision"), varied_runs(tmp, RUNS))
    app = create_app(db)
    with TestClient(app, base_url="http://127.0.0.1") as c:
        assert c.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
        yield c
    app.state.greenml.store.close()


def _ids(html: str) -> list[str]:
    return re.findall(r'<span class="muted id">(run\d{4})</span>', html)


@settings(max_examples=60)
@given(q=st.text(max_size=30), sort=st.sampled_from(SORTS) | st.text(max_size=8),
       order=st.text(max_size=5), offset=st.integers(-3, 20))  # fmt: skip
def test_any_parameters_give_a_page_or_one_clear_error(
    client: Any, q: str, sort: str, order: str, offset: int
) -> None:
    r = client.get("/runs", params={"q": q, "sort": sort, "order": order, "offset": offset})
    assert r.status_code in (200, 400, 422), r.text[:300]
    if r.status_code == 200:
        assert len(_ids(r.text)) <= max(RUNS - max(offset, 0), 0)
    else:
        assert "Traceback" not in r.text


def test_search_keeps_runs_matching_every_word_and_sorts_by_any_column(client: Any) -> None:
    both = _ids(client.get("/runs", params={"q": "BERT nlp"}).text)  # any case, every word
    assert both and all(int(i[3:]) % 3 == 1 and int(i[3:]) % 2 == 0 for i in both)
    assert _ids(client.get("/runs", params={"q": "100%_"}).text) == []  # no wildcard
    for sort in SORTS:
        down = _ids(client.get("/runs", params={"sort": sort}).text)
        up = _ids(client.get("/runs", params={"sort": sort, "order": "asc"}).text)
        assert sorted(down) == sorted(up) and len(down) == RUNS, sort
    assert _ids(client.get("/runs", params={"sort": "energy"}).text)[0] == f"run{RUNS - 1:04d}"
    assert client.get("/runs", params={"sort": "nope"}).status_code == 400


@settings(max_examples=25)
@given(name=st.text(min_size=1, max_size=70))
def test_any_saved_filter_name_is_kept_escaped_or_refused(client: Any, name: str) -> None:
    page = client.get("/runs", params={"q": "vision", "sort": "cost"}).text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf
    form = {"csrf": csrf.group(1), "filter": name, "q": "vision", "sort": "cost"}
    saved = client.post("/runs/saved", data=form, follow_redirects=False)
    clean = name.strip()
    if not clean or len(clean) > 64 or not clean.isprintable():
        assert saved.status_code == 400
        return
    assert saved.status_code == 303 and saved.headers["location"] == "/runs?q=vision&sort=cost"
    listing = client.get("/runs").text
    assert "<script" not in listing.split("Saved filters", 1)[1].split("</div>", 1)[0]
    gone = client.post("/runs/saved/delete", data={"csrf": csrf.group(1), "filter": clean},
                       follow_redirects=False)  # fmt: skip
    assert gone.status_code == 303
    forged = client.post("/runs/saved", data={**form, "csrf": "x"}, follow_redirects=False)
    assert forged.status_code == 403
