"""``greenml server token``, ``greenml push`` and ``greenml run --server``: one line and exit 2
on bad input; the [server] config table read strictly (property-based)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.cli import main
from greenml.errors import ConfigError
from greenml.run.server_settings import read_server_config, server_settings
from greenml.server.api_runs import parse_time
from greenml.store import access, open_store


def test_token_create_prints_it_once_and_it_works(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "s.db")
    assert main(["server", "token", "create", "--project", "vision", "--role", "read",
                 "--db", db]) == 0  # fmt: skip
    out = capsys.readouterr()
    secret = out.out.strip()
    assert secret.startswith("gml_") and "not shown again" in out.err
    with open_store(db) as store:
        assert access.authenticate(store, secret).role == "read"
    assert main(["server", "token", "revoke", secret[:10], "--db", db]) == 0
    assert main(["server", "token", "create", "--project", "no spaces!", "--db", db]) == 2
    assert "project name" in capsys.readouterr().err


def test_push_and_run_say_one_line_on_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("GREENML_SERVER", raising=False)
    assert main(["push", "--db", str(tmp_path / "x.db")]) == 2
    assert "no team server" in capsys.readouterr().err
    assert main(["run", "--server", "ftp://nope", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "http://" in err and len(err.strip().splitlines()) == 1


def test_config_table_and_environment_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[server]\nurl = "https://a.example/"\ntoken = "gml_file"\n')
    monkeypatch.delenv("GREENML_SERVER", raising=False)
    monkeypatch.delenv("GREENML_TOKEN", raising=False)
    found = server_settings(config_path=config)
    assert found is not None and found.url == "https://a.example" and found.token == "gml_file"
    assert "gml_file" not in repr(found)
    monkeypatch.setenv("GREENML_TOKEN", "gml_env")
    monkeypatch.setenv("GREENML_SERVER", "http://b.example")
    found = server_settings(config_path=config)
    assert found is not None and (found.url, found.token) == ("http://b.example", "gml_env")
    assert server_settings("https://c.example", config_path=config).url == "https://c.example"  # type: ignore[union-attr]
    config.write_text('[server]\nurl = "https://a.example"\ntokn = "x"\n')
    with pytest.raises(ConfigError, match="unknown \\[server\\] key"):
        read_server_config(config)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_any_config_text_reads_or_says_one_line(tmp_path: Path, text: str) -> None:
    config = tmp_path / "c.toml"
    config.write_text(text, encoding="utf-8")
    try:
        found = read_server_config(config)
    except ConfigError as exc:
        assert "\n" not in str(exc).strip() or str(exc).startswith("config file")
    else:
        assert set(found) <= {"url", "token"}


@given(st.text(max_size=60))
def test_any_time_parameter_parses_or_is_a_config_error(text: str) -> None:
    try:
        value = parse_time(text, "since")
    except ConfigError as exc:
        assert "since" in str(exc)
    else:
        assert value is None or isinstance(value, float)
