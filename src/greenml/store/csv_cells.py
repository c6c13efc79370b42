"""CSV cells a spreadsheet will not run: one rule for every CSV greenml writes.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a TAB or a carriage return
(OWASP's CSV-injection list; TAB and CR because spreadsheets strip them and then
read the formula behind them) gets a leading ``'``, unless it is a plain number
(``-1.5`` stays a number). Numbers and ``None`` (an empty cell) pass as they are.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def csv_cell(value: Any) -> Any:
    """The value as a safe CSV cell: ``None`` → empty, formula-like text quoted with ``'``."""
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return value
    text = str(value)
    if text.startswith(FORMULA_STARTS) and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
