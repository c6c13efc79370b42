"""Cache keys: the same request written differently gives one key; a different one does not."""

from __future__ import annotations

import pytest

from greenml.errors import ConfigError
from greenml.serve.cache.keys import cache_key, normalize_text


def test_whitespace_and_unicode_forms_do_not_matter() -> None:
    assert normalize_text("  What is\t the\n\ncapital  of France? ") == (
        "What is the capital of France?"
    )
    composed, decomposed = "café", "cafe\u0301"
    assert cache_key(composed, "m") == cache_key(decomposed, "m")
    spaced = cache_key(" hello   world ", "gpt", {"t": 0.7})
    assert spaced == cache_key("hello world", " gpt ", {"t": 0.7})


def test_parameters_are_canonical() -> None:
    a = cache_key("p", "m", {"temperature": 1.0, "max_tokens": 64, "stop": ["\n"]})
    b = cache_key("p", "m", {"stop": ["\n"], "max_tokens": 64.0, "temperature": 1})
    assert a == b
    assert len(a) == 64 and int(a, 16) >= 0  # SHA-256 hex


@pytest.mark.parametrize(
    ("other"),
    [
        ("P", "m", {"temperature": 1}),  # case can change an answer
        ("p", "m2", {"temperature": 1}),
        ("p", "m", {"temperature": 0.5}),
        ("p", "m", {}),
    ],
)
def test_what_changes_the_answer_changes_the_key(other: tuple) -> None:
    assert cache_key("p", "m", {"temperature": 1}) != cache_key(*other)


def test_chat_messages_are_normalized_too() -> None:
    one = [{"role": "user", "content": "Hi  there"}]
    two = [{"content": " Hi there ", "role": "user"}]
    assert cache_key(one, "m") == cache_key(two, "m")


def test_parameters_that_are_not_json_fail_clearly() -> None:
    with pytest.raises(ConfigError, match="not JSON-serializable"):
        cache_key("p", "m", {"callback": print})
    with pytest.raises(ConfigError, match="not JSON-serializable"):
        cache_key("p", "m", {"t": float("nan")})
