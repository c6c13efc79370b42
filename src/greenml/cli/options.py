"""Options shared by several commands."""

from __future__ import annotations

import click

from greenml.errors import ConfigError

db_option = click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="Run store: a path, sqlite:///… or postgresql://… "
    "(default: $GREENML_DB or the per-user SQLite file).",
)


def parse_share(text: str, what: str, *, at_most: float | None = 1.0) -> float:
    """``15%``, ``15`` or ``0.15`` → 0.15 (a bare number above 1 is a percentage).

    Raises:
        ConfigError: Not a number, negative, or above ``at_most`` (None: no bound).
    """
    raw = text.strip()
    try:
        value = float(raw.rstrip("%"))
    except ValueError:
        raise ConfigError(f"{what} must be a percentage like 15%, not {text!r}") from None
    if raw.endswith("%") or value > 1:
        value /= 100.0
    if not value >= 0 or (at_most is not None and value > at_most):
        bound = f" and {at_most:.0%}" if at_most is not None else ""
        raise ConfigError(f"{what} must be between 0%{bound}, not {text!r}")
    return value
