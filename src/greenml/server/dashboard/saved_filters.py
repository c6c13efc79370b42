"""Saved filters of the runs table: named views (search, filters, sort) kept on the
server, per project, so the whole team sees the same "last week's GPU runs".

They live in the store's advisor state (namespace ``dashboard-filters``, one
entry per project), so they survive restarts and need no new table. Saving and
deleting are POST forms that carry the session's CSRF token.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from greenml.errors import AccessDenied, ConfigError
from greenml.report.svg import esc
from greenml.server.auth import SESSION_COOKIE, Scope, same_origin, scope_for
from greenml.server.dashboard.layout import CSRF_FIELD, link
from greenml.server.state import state_of

router = APIRouter(include_in_schema=False)
NAMESPACE = "dashboard-filters"
KEPT = ("q", "name", "tag", "status", "user", "since", "until", "sort", "order")
"""The query parameters a saved filter keeps."""
MAX_SAVED = 50
NAME_MAX = 64
VALUE_MAX = 500


def saved(request: Request, where: Scope) -> dict[str, str]:
    """The project's saved filters: name → query string of ``/runs``."""
    found = state_of(request).store.get_state(NAMESPACE, str(where.project_id)) or {}
    filters = found.get("filters")
    return {str(k): str(v) for k, v in filters.items()} if isinstance(filters, dict) else {}


def saved_filters_html(request: Request, where: Scope, view: dict[str, str]) -> str:
    """Links to the saved filters, a delete button each, and a form saving the current view."""
    items = []
    for name, params in sorted(saved(request, where).items()):
        items.append(
            f'<span>{link("/runs?" + params, name)}'
            f'{_post_form("/runs/saved/delete", where, {"filter": name}, "×", "delete " + name)}'
            "</span>"
        )  # fmt: skip
    listed = "".join(items) or '<span class="muted">none yet</span>'
    keep = {k: view.get(k, "") for k in KEPT}
    fields = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">'
                     for k, v in keep.items() if v)  # fmt: skip
    save = ""
    if where.csrf:
        save = (
            '<form method="post" action="/runs/saved">'
            f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(where.csrf)}">{fields}'
            f'<label>save this view as <input name="filter" maxlength="{NAME_MAX}" required>'
            '</label> <button type="submit">Save filter</button></form>'
        )
    return f'<div class="saved"><strong>Saved filters:</strong> {listed} {save}</div>'


def _post_form(action: str, where: Scope, fields: dict[str, str], text: str, label: str) -> str:
    if not where.csrf:
        return ""
    hidden = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">'
                     for k, v in {CSRF_FIELD: where.csrf, **fields}.items())  # fmt: skip
    return (f'<form method="post" action="{action}">{hidden}'
            f'<button type="submit" class="link" aria-label="{esc(label)}">{esc(text)}</button>'
            "</form>")  # fmt: skip


async def _form(request: Request) -> tuple[Scope, dict[str, str]]:
    """The session's scope and the posted form, once its CSRF token and origin check out.

    The session cookie grants no POST by itself (:func:`greenml.server.auth.cookie_allowed`):
    this one is granted only with the session's CSRF token, sent from this server's page.
    """
    form = {k: v[0] for k, v in parse_qs((await request.body()).decode("utf-8", "replace"),
                                          keep_blank_values=True).items()}  # fmt: skip
    sid = request.cookies.get(SESSION_COOKIE) or ""
    state = state_of(request)
    if not same_origin(request) or not state.sessions.check_csrf(sid, form.get(CSRF_FIELD, "")):
        raise AccessDenied("save filters from the dashboard's own form (CSRF check failed)", 403)
    where = scope_for(state.store, state.sessions.token(sid), "read", None, public_read=False)
    return where, form


def _store(request: Request, where: Scope, filters: dict[str, str]) -> None:
    state_of(request).store.put_state(NAMESPACE, str(where.project_id), {"filters": filters})


@router.post("/runs/saved")
async def save_filter(request: Request) -> Response:
    """Save the posted view under its name (replacing one of the same name)."""
    where, form = await _form(request)
    name = form.get("filter", "").strip()
    if not name or len(name) > NAME_MAX or not name.isprintable():
        raise ConfigError(f"a filter's name is 1 to {NAME_MAX} printable characters")
    params = {k: form[k] for k in KEPT if form.get(k)}
    if any(len(v) > VALUE_MAX for v in params.values()):
        raise ConfigError(f"a saved filter's values are at most {VALUE_MAX} characters")
    filters: dict[str, Any] = saved(request, where)
    if name not in filters and len(filters) >= MAX_SAVED:
        raise ConfigError(f"a project keeps at most {MAX_SAVED} saved filters: delete one first")
    filters[name] = urlencode(params)
    _store(request, where, filters)
    return RedirectResponse("/runs?" + filters[name], status_code=303)


@router.post("/runs/saved/delete")
async def delete_filter(request: Request) -> Response:
    """Delete the named saved filter (nothing happens when there is none)."""
    where, form = await _form(request)
    filters = saved(request, where)
    filters.pop(form.get("filter", ""), None)
    _store(request, where, filters)
    return RedirectResponse("/runs", status_code=303)


__all__ = ["router", "saved", "saved_filters_html"]
