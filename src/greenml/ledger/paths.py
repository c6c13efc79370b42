"""Where a store's ledger lives, and where its signing key comes from.

Order: ``GREENML_LEDGER`` > next to the SQLite file (``runs.db`` →
``runs.ledger.jsonl``) > for PostgreSQL, ``ledgers/`` in the per-user data
directory, one file per database: its server, port, user, database name and
the options that choose its schema (:func:`store_identity`). The password,
other credentials and per-connection settings (``connect_timeout``,
``sslmode``, ``application_name`` ...) are not part of the name, so every
spelling of one store's URL finds the one ledger. A ledger an earlier greenml
named after the URL as typed is moved to its new name on first use
(:mod:`greenml.ledger.legacy`). An in-memory SQLite store has no ledger.

Lazy imports: platformdirs (~10 ms) is imported inside the functions that use it, so
importing this module stays cheap.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlsplit

from greenml.store.url import resolve_url, sqlite_path

LEDGER_ENV = "GREENML_LEDGER"
KEY_ENV = "GREENML_LEDGER_KEY"
SUFFIX = ".ledger.jsonl"

# libpq parameters that choose which database (and schema) a connection reaches; every
# other one is a credential (password, sslkey, passfile ...) or a per-connection setting
_IDENTITY_PARAMS = ("host", "hostaddr", "port", "dbname", "user", "options", "service")


def ledger_path(db_url: str | None = None) -> Path | None:
    """The ledger file of a store; ``None`` for an in-memory SQLite store.

    Args:
        db_url: The store's URL or path (masked or not); ``None`` for
            ``GREENML_DB`` or the default store.

    Raises:
        ConfigError: The URL is not understood.
    """
    chosen = os.environ.get(LEDGER_ENV)
    if chosen:
        return Path(chosen).expanduser()

    url = resolve_url(db_url)
    if url.split("://", 1)[0].lower().startswith("sqlite"):
        db_file = sqlite_path(url)
        return None if db_file is None else db_file.with_name(db_file.stem + SUFFIX)
    from greenml.ledger.legacy import adopt_legacy

    path = _postgres_ledger(store_identity(url))
    return adopt_legacy(path, [_postgres_ledger(old) for old in legacy_names(url)])


def store_identity(url: str) -> str:
    """The PostgreSQL database a URL reaches, as text: no password, no volatile settings.

    ``postgresql+psycopg://user@host:port/db`` plus the identity parameters
    (``options`` choosing a schema, ``host`` for a socket ...), sorted.
    The same database with or without a password, another ``connect_timeout``
    or parameters in another order gives the same text.
    """
    parts = urlsplit(url)
    user = _user(parts.netloc)
    host_port = parts.netloc.rpartition("@")[2].lower()
    kept = sorted(
        (key, value)
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
        if key.lower() in _IDENTITY_PARAMS
    )
    query = "&".join(f"{key}={quote(value, safe='')}" for key, value in kept)
    netloc = f"{user}@{host_port}" if user else host_port
    return f"postgresql+psycopg://{netloc}{parts.path}" + (f"?{query}" if query else "")


def legacy_names(url: str) -> list[str]:
    """The texts an earlier greenml may have named this store's ledger after: the URL
    as typed (password masked) and its identity, each with a password and without."""
    from greenml.store.url import mask_url, without_password

    names = [mask_url(url)]
    for bare in (without_password(mask_url(url)), store_identity(url)):
        names.append(bare)
        user = _user(urlsplit(bare).netloc)
        if user:
            names.append(bare.replace(f"://{user}@", f"://{user}:***@", 1))
    return list(dict.fromkeys(names))


def _user(netloc: str) -> str:
    """The user name of a URL's netloc, as typed (``""``: none)."""
    userinfo, at, _ = netloc.rpartition("@")
    return userinfo.partition(":")[0] if at else ""


def _postgres_ledger(name: str) -> Path:
    """The ledger file named after a store's text (see :func:`store_identity`)."""
    import platformdirs

    parts = urlsplit(name)
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{parts.hostname or 'local'}-{parts.path[1:]}")
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:12]
    folder = Path(platformdirs.user_data_dir("greenml")) / "ledgers"
    return folder / f"postgresql-{label}-{digest}{SUFFIX}"


def key_path_from_env() -> Path | None:
    """``GREENML_LEDGER_KEY``: the PEM private key that signs new entries, if set."""
    chosen = os.environ.get(KEY_ENV)
    return Path(chosen).expanduser() if chosen else None
