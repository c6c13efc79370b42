"""The team server: a JSON API and a dashboard over one run store, per project.

``greenml server`` serves :func:`greenml.server.app.create_app` with uvicorn.
FastAPI and uvicorn come with the ``server`` extra and are imported only here::

    from greenml.server.app import create_app
    app = create_app("postgresql://greenml@db/greenml")

Modules: ``app`` (assembly, errors, body limit), ``auth`` (tokens, sessions,
project scope), ``api_runs`` (upload, list, one run), ``api_projects``
(aggregates, reports, tokens), ``samples`` (downsampling), ``dashboard/`` (HTML).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

if TYPE_CHECKING:
    from greenml.server.app import create_app

__all__ = ["create_app"]


# FastAPI is the server extra: imported when create_app is first used
__getattr__ = lazy_exports(__name__, {"create_app": "greenml.server.app"})
