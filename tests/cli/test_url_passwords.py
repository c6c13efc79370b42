"""Issue 29: no message prints a URL's password (one helper, ``greenml.store.url.mask_url``).

The spool hint printed the full ``--db`` URL, password and all; so did ``config show``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.errors import ConfigError
from greenml.run.server_settings import server_settings
from greenml.store.url import mask_url

PY = sys.executable
SECRET = "hunter2Zq"
UNREACHABLE = f"postgresql://postgres:{SECRET}@127.0.0.1:1/test"  # port 1: refused at once


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "GREENML_SPOOL_DIR": str(tmp_path / "spool")}
    for name in ("GREENML_DB", "GREENML_LEDGER"):
        env.pop(name, None)
    return env


def test_the_spool_hint_never_prints_the_db_password(tmp_path: Path) -> None:
    """A store that does not answer: the run waits in the spool, and the hint naming the
    command that stores it shows the URL with its password masked (and quoted)."""
    # long enough for the recorder (which waits 0.25 s, then imports SQLAlchemy) to meet
    # the refusal before the command ends, on a busy machine too
    done = subprocess.run([PY, "-m", "greenml", "run", "--db", UNREACHABLE, "--", PY, "-c",
                           "import time; time.sleep(5)"], capture_output=True, text=True,
                          env=_env(tmp_path), timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the run waits in" in done.stderr, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert "--db 'postgresql://postgres:***@127.0.0.1:1/test'" in done.stderr
    for spooled in (tmp_path / "spool").glob("*.json"):
        assert SECRET not in spooled.read_text()


def test_config_show_never_prints_the_db_password(tmp_path: Path) -> None:
    env = {**_env(tmp_path), "GREENML_DB": UNREACHABLE,
           "GREENML_SERVER": f"https://team:{SECRET}@greenml.example"}  # fmt: skip
    for args in (["config", "show"], ["config", "show", "--json"]):
        done = subprocess.run([PY, "-m", "greenml", *args], capture_output=True, text=True,
                              env=env, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert SECRET not in done.stdout + done.stderr
    rows = {row["name"]: row["value"] for row in json.loads(done.stdout)}
    assert rows["store.db"] == "postgresql://postgres:***@127.0.0.1:1/test"
    assert rows["server.url"] == "https://team:***@greenml.example"


def test_a_refused_server_or_cache_url_never_prints_its_password() -> None:
    with pytest.raises(ConfigError) as refused:
        server_settings(f"ftp://team:{SECRET}@greenml.example")
    assert SECRET not in str(refused.value) and "***" in str(refused.value)
    pytest.importorskip("redis")
    from greenml.serve.cache.redis import RedisBackend

    with pytest.raises(ConfigError) as bad:
        RedisBackend(f"redis://:{SECRET}@127.0.0.1:port/0")
    assert SECRET not in str(bad.value)


_password = st.text(
    st.characters(codec="ascii", categories=("L", "N"), include_characters="!$%&'()*+,;=-._~"),
    min_size=1, max_size=20,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    password=_password,
    user=st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
    scheme=st.sampled_from(["postgresql", "postgres", "postgresql+psycopg", "redis", "https"]),
)
def test_mask_url_hides_any_password(password: str, user: str, scheme: str) -> None:
    """Property: in the netloc or as ``password=``, a password never survives masking."""
    query = f"password={quote(password, safe='')}&a=b"  # a query value is percent-encoded
    masked = mask_url(f"{scheme}://{user}:{password}@db.example:5432/x?{query}")
    parts = urlsplit(masked)
    assert parts.password == "***" and parts.username == user
    assert parts.query == "password=***&a=b"
    assert parts.hostname == "db.example" and parts.path == "/x"
