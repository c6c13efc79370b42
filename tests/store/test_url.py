"""URL resolution: explicit > GREENML_DB > default file; schemes and masking."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from greenml.errors import ConfigError
from greenml.store import default_db_url, url


def test_explicit_url_beats_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GREENML_DB", f"sqlite:///{tmp_path}/env.db")
    assert url.resolve_url(f"sqlite:///{tmp_path}/arg.db") == f"sqlite:///{tmp_path}/arg.db"
    assert url.resolve_url(None) == f"sqlite:///{tmp_path}/env.db"


def test_default_is_user_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import platformdirs

    monkeypatch.delenv("GREENML_DB", raising=False)
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda app: str(tmp_path / app))
    expected = f"sqlite:///{tmp_path / 'greenml' / 'greenml.db'}"
    assert default_db_url() == expected
    assert url.resolve_url() == expected


def test_default_store_creates_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import platformdirs

    from greenml.store import open_store

    monkeypatch.delenv("GREENML_DB", raising=False)
    monkeypatch.setattr(platformdirs, "user_data_dir", lambda app: str(tmp_path / "data" / app))
    with open_store() as store:
        assert store.list_runs() == []
    assert (tmp_path / "data" / "greenml" / "greenml.db").is_file()


def test_plain_path_becomes_sqlite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert url.resolve_url(str(tmp_path / "x.db")) == f"sqlite:///{tmp_path / 'x.db'}"
    monkeypatch.chdir(tmp_path)
    assert url.resolve_url("rel.db") == f"sqlite:///{tmp_path / 'rel.db'}"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert url.resolve_url("~/h.db") == f"sqlite:///{tmp_path / 'h.db'}"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgres://u:p@db:5432/runs", "postgresql+psycopg://u:p@db:5432/runs"),
        (
            "postgresql://u@db/runs?sslmode=require",
            "postgresql+psycopg://u@db/runs?sslmode=require",
        ),
        ("postgresql+psycopg://u@db/runs", "postgresql+psycopg://u@db/runs"),
    ],
)
def test_postgres_urls_use_psycopg3(given: str, expected: str) -> None:
    assert url.resolve_url(given) == expected


def test_postgres_without_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(url, "_has_psycopg", lambda: False)
    with pytest.raises(ConfigError, match=r"pip install 'greenml\[postgres\]'") as err:
        url.resolve_url("postgres://u:secret@db/runs")
    assert "secret" not in str(err.value)


@pytest.mark.parametrize("given", ["mysql://u@db/x", "redis://localhost", "http://x/y.db"])
def test_unknown_scheme_is_config_error(given: str) -> None:
    scheme = given.split(":", 1)[0]
    with pytest.raises(ConfigError, match=repr(scheme)):
        url.resolve_url(given)


def test_mask_url() -> None:
    assert url.mask_url("postgresql://u:pa%40ss@h/db") == "postgresql://u:***@h/db"
    assert (
        url.mask_url("postgresql://u@h/db?password=x&a=1") == "postgresql://u@h/db?password=***&a=1"
    )
    assert url.mask_url("sqlite:////tmp/a.db") == "sqlite:////tmp/a.db"


def test_import_does_not_load_sqlalchemy() -> None:
    code = (
        "import sys, greenml.store, greenml.store.url, greenml.store.record, "
        "greenml.store.export; from greenml.store import open_store, default_db_url; "
        "default_db_url(); "
        "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported'"
    )
    src = Path(__file__).resolve().parents[2] / "src"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONPATH": str(src)}
    )
    assert proc.returncode == 0, proc.stderr
