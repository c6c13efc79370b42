"""Cross-site request forgery: a page of another site cannot act with a signed-in browser.

The JSON API takes bearer tokens only; the session cookie grants reading dashboard
pages; signing in and out checks the origin, and signing out the session's CSRF token.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import func, select

from tests.server.conftest import Server
from tests.server.helpers import local_document

EVIL = {"Origin": "http://127.0.0.1:8666"}  # another port is another origin


def _sign_in(server: Server, token: str) -> None:
    signed = server.client.post("/login", data={"token": token}, follow_redirects=False)
    assert signed.status_code == 303 and "greenml_session" in signed.cookies


def _token_count(server: Server) -> int:
    from greenml.store.schema import tokens

    store = server.client.app.state.greenml.store  # type: ignore[attr-defined]
    with store.reading("count tokens of") as conn:
        return int(conn.execute(select(func.count()).select_from(tokens)).scalar_one())


def test_a_cross_origin_post_with_the_session_cookie_creates_no_token_and_uploads_no_run(
    server: Server, tmp_path: Path
) -> None:
    _sign_in(server, server.tokens["A-admin"])
    assert server.client.get("/runs").status_code == 200  # the cookie reads pages
    before = _token_count(server)
    for headers in (EVIL, {"Origin": "http://testserver"}, {}):  # the API never takes the cookie
        made = server.client.post("/api/v1/projects/A/tokens?role=admin", headers=headers)
        assert made.status_code == 401, made.text
        assert set(made.json()) == {"error"}  # no token in the answer
        doc = local_document(tmp_path, name="forged")
        sent = server.client.post("/api/v1/runs", json=doc, headers=headers)
        assert sent.status_code == 401, sent.text
        reader = {"Authorization": f"Bearer {server.tokens['A-read']}"}
        read = server.client.get(f"/api/v1/runs/{doc['record']['id']}", headers=reader)
        assert read.status_code == 404
    # a text/plain form post (no preflight in a browser) is refused as well
    plain = server.client.post("/api/v1/runs", content=b"{}", headers={**EVIL,
                               "Content-Type": "text/plain"})  # fmt: skip
    assert plain.status_code == 401
    assert _token_count(server) == before
    # the bearer token still works, from anywhere
    ok = server.client.post("/api/v1/projects/A/tokens?role=read", headers={
        **EVIL, "Authorization": f"Bearer {server.tokens['A-admin']}"})  # fmt: skip
    assert ok.status_code == 201 and _token_count(server) == before + 1


def test_login_from_another_origin_signs_nobody_in(server: Server) -> None:
    forged = server.client.post("/login", data={"token": server.tokens["A-admin"]},
                                headers=EVIL, follow_redirects=False)  # fmt: skip
    assert forged.status_code == 401 and "greenml_session" not in forged.cookies
    assert "another site" in forged.text
    referred = server.client.post("/login", data={"token": server.tokens["A-admin"]},
                                  headers={"Referer": "http://evil.example/page"},
                                  follow_redirects=False)  # fmt: skip
    assert referred.status_code == 401
    assert server.client.get("/runs", follow_redirects=False).status_code == 401
    own = {"Origin": "http://testserver"}
    same = server.client.post("/login", data={"token": server.tokens["A-read"]}, headers=own,
                              follow_redirects=False)  # fmt: skip
    assert same.status_code == 303


def test_logout_without_the_sessions_csrf_token_is_refused(server: Server) -> None:
    _sign_in(server, server.tokens["A-read"])
    page = server.client.get("/runs").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page)
    assert csrf is not None
    assert server.client.post("/logout", follow_redirects=False).status_code == 403
    wrong = server.client.post("/logout", data={"csrf": "x" * 43}, follow_redirects=False)
    assert wrong.status_code == 403
    cross = server.client.post("/logout", data={"csrf": csrf.group(1)}, headers=EVIL,
                               follow_redirects=False)  # fmt: skip
    assert cross.status_code == 403
    assert server.client.get("/runs").status_code == 200  # still signed in
    out = server.client.post("/logout", data={"csrf": csrf.group(1)}, follow_redirects=False)
    assert out.status_code == 303
    assert server.client.get("/runs", follow_redirects=False).status_code == 401
