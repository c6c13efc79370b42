"""One TOML reader: every file greenml reads as TOML fails the same way, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenml.accounting.market import read_market_file
from greenml.advise.tco_inputs import load_toml
from greenml.config.settings import read_file
from greenml.config.toml_file import read_toml
from greenml.errors import ConfigError
from greenml.run.server_settings import read_server_config


@pytest.mark.parametrize(("content", "reason"), [
    (b"[market\n", "not valid TOML (Expected ']' at the end of a table declaration (at line 1"),
    (b"\xff\xfe[x]\n", "not UTF-8 text"),
])  # fmt: skip
def test_every_reader_says_what_the_file_is_where_and_why(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "f.toml"
    path.write_bytes(content)
    for read, what in ((read_file, "config file"), (read_server_config, "config file"),
                       (read_market_file, "market file"), (load_toml, "TCO file")):  # fmt: skip
        with pytest.raises(ConfigError) as caught:
            read(path)
        assert str(caught.value).startswith(f"{what} {path}: {reason}"), str(caught.value)


def test_a_missing_file_is_empty_only_where_that_is_asked(tmp_path: Path) -> None:
    missing = tmp_path / "none.toml"
    assert read_toml(missing, "config file", missing_ok=True) == {}
    assert read_file(missing) == {} and read_server_config(missing) == {}
    with pytest.raises(ConfigError, match=r"market file .* does not exist"):
        read_market_file(missing)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(content=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_any_file_is_tables_or_one_line(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "any.toml"
    path.write_bytes(content)
    try:
        assert isinstance(read_toml(path, "config file"), dict)
    except ConfigError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(f"config file {path}: ")
