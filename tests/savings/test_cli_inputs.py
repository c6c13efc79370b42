"""The plan's selection and money options, read from the command line: a value or one line."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from greenml.cli.savings import _rate, _since, _tags
from greenml.errors import ConfigError

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@given(st.lists(TEXT, max_size=3))
def test_tags_are_pairs_or_one_line(values: list[str]) -> None:
    try:
        tags = _tags(tuple(values))
    except ConfigError as exc:
        assert "\n" not in str(exc) and "--tag" in str(exc)
        return
    assert all(key for key in tags) and len(tags) <= len(values)


@given(st.one_of(TEXT, st.sampled_from(["30d", "12h", "2026-10-01T00:00:00Z", "+5h", "-3"])))
def test_since_is_an_instant_or_one_line(text: str) -> None:
    try:
        value = _since(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert value is not None and value == value  # a finite time


@given(st.one_of(TEXT, st.sampled_from(["3%", "-2%", "0", "150%", "-80%", "nan"])))
def test_escalation_is_a_rate_within_bounds_or_one_line(text: str) -> None:
    try:
        rate = _rate(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert -0.5 <= rate <= 1.0
