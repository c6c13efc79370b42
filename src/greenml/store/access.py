"""Projects and API tokens of a team server, kept in the run store.

A token is ``gml_`` + 43 URL-safe characters from :func:`secrets.token_urlsafe`
(256 random bits). The store keeps only its SHA-256: a token that random cannot
be guessed from its hash, so a slow password hash (bcrypt, Argon2: made for
secrets people choose) would add ~100 ms to every API call and protect nothing
more; a plain SHA-256 also lets the server find a token by an indexed lookup
of its hash. The secret is shown once, when it is created.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select, update

from greenml.errors import AccessDenied, ConfigError
from greenml.store.schema import projects, tokens

if TYPE_CHECKING:
    from greenml.store.repository import Store

ROLES = ("read", "write", "admin")
"""``read``: see the project's runs and reports; ``write``: also upload runs;
``admin``: also create tokens of the project."""
TOKEN_PREFIX = "gml_"
PROJECT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class Grant:
    """What a valid token allows: one project, one role."""

    project_id: int
    project: str
    role: str
    token_id: int

    def allows(self, role: str) -> bool:
        """Whether this grant's role includes ``role`` (admin ⊃ write ⊃ read)."""
        return ROLES.index(self.role) >= ROLES.index(role)


def token_hash(secret: str) -> str:
    """The SHA-256 (hex) under which a token is stored."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def check_project_name(name: str) -> str:
    """``name`` if it is a valid project name (letters, digits, ``. _ -``; at most 64).

    Raises:
        ConfigError: It is not.
    """
    if not PROJECT_NAME.match(name or ""):
        raise ConfigError(
            f"project name {name!r} must be 1-64 letters, digits, '.', '_' or '-' "
            "and start with a letter or digit"
        )
    return name


def ensure_project(store: Store, name: str) -> int:
    """The id of project ``name``, created if it does not exist."""
    check_project_name(name)
    with store.writing("create a project in") as conn:
        found = conn.execute(select(projects.c.id).where(projects.c.name == name)).scalar()
        if found is not None:
            return int(found)
        result = conn.execute(projects.insert().values(name=name, created_at=time.time()))
        return int(result.inserted_primary_key[0])  # type: ignore[index]


def project_id(store: Store, name: str) -> int | None:
    """The id of project ``name``, or None."""
    with store.reading("read projects in") as conn:
        found = conn.execute(select(projects.c.id).where(projects.c.name == name)).scalar()
    return None if found is None else int(found)


def list_projects(store: Store) -> list[dict[str, object]]:
    """Every project as ``{"id", "name"}``, by name."""
    with store.reading("read projects in") as conn:
        rows = conn.execute(select(projects.c.id, projects.c.name).order_by(projects.c.name))
        return [{"id": int(r[0]), "name": str(r[1])} for r in rows]


def create_token(store: Store, project: str, role: str) -> str:
    """Create a token of ``role`` for ``project`` (made if new); the secret, shown only now.

    Raises:
        ConfigError: Unknown role or invalid project name.
    """
    if role not in ROLES:
        raise ConfigError(f"token role must be one of {', '.join(ROLES)}, not {role!r}")
    pid = ensure_project(store, project)
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with store.writing("create a token in") as conn:
        conn.execute(tokens.insert().values(
            project_id=pid, role=role, token_sha256=token_hash(secret),
            prefix=secret[: len(TOKEN_PREFIX) + 6], created_at=time.time(),
        ))  # fmt: skip
    return secret


def authenticate(store: Store, secret: str) -> Grant:
    """The grant of a token.

    Raises:
        AccessDenied: The token is unknown or revoked (status 401).
    """
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        raise AccessDenied("invalid token: greenml tokens start with gml_")
    query = (
        select(tokens.c.id, tokens.c.role, tokens.c.revoked_at, projects.c.id, projects.c.name)
        .join(projects, projects.c.id == tokens.c.project_id)
        .where(tokens.c.token_sha256 == token_hash(secret))
    )
    with store.reading("check a token in") as conn:
        row = conn.execute(query).first()
    if row is None:
        raise AccessDenied("unknown token")
    if row[2] is not None:
        raise AccessDenied("this token was revoked")
    return Grant(
        project_id=int(row[3]), project=str(row[4]), role=str(row[1]), token_id=int(row[0])
    )


def revoke_token(store: Store, secret_or_prefix: str) -> int:
    """Revoke tokens by secret or shown prefix (``gml_abcdef``); how many were revoked."""
    where = (
        tokens.c.token_sha256 == token_hash(secret_or_prefix)
        if len(secret_or_prefix) > len(TOKEN_PREFIX) + 6
        else tokens.c.prefix == secret_or_prefix
    )
    with store.writing("revoke a token in") as conn:
        live = tokens.c.revoked_at.is_(None)
        result = conn.execute(update(tokens).where(where, live).values(revoked_at=time.time()))
    return int(result.rowcount)
