"""Canonical JSON (RFC 8785, JCS) of run records, and their SHA-256.

The bytes hashed for a record are fixed by these rules, so that a record read
back from SQLite or PostgreSQL, or from a ``greenml runs export`` JSON file,
hashes the same as when it was ledgered:

* objects: keys sorted by their UTF-16 code units (RFC 8785 §3.2.3), no
  whitespace anywhere, ``,`` and ``:`` as separators; keys must be strings;
* strings: UTF-8, escaping only ``"``, ``\\`` and the control characters
  U+0000–U+001F (``\\b \\t \\n \\f \\r`` by name, the others as ``\\u00xx``);
  everything else, non-ASCII included, is written as is;
* ``true``, ``false``, ``null``; lists and tuples are arrays;
* floats: ECMAScript ``Number.prototype.toString`` (RFC 8785 §3.2.2.3) over the
  shortest digits that round-trip (Python's ``repr``): ``1.0`` → ``1``,
  ``-0.0`` → ``0``, ``1e-07`` → ``1e-7``, ``1.5e+20`` → ``150000000000000000000``,
  ``1e21`` → ``1e+21``. NaN and the infinities are refused;
* integers: exact decimal digits (equal to JCS up to 2**53, where every double
  is exact; JCS itself would round larger ones), so ``1`` and ``1.0`` hash alike.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from greenml.errors import LedgerError

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord


def canonical_json(value: Any) -> bytes:
    """The canonical UTF-8 bytes of a JSON-ready value.

    Raises:
        LedgerError: The value holds a non-finite float, a non-string key, or a
            type JSON has no form for.
    """
    parts: list[str] = []
    _write(value, parts)
    try:
        return "".join(parts).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LedgerError(f"cannot canonicalize a lone surrogate in a string: {exc}") from exc


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 lowercase hex digits."""
    return hashlib.sha256(data).hexdigest()


def record_sha256(record: RunRecord | Mapping[str, Any]) -> str:
    """The SHA-256 of a run record's canonical JSON (a typed record: of its ``to_dict()``)."""
    if not isinstance(record, Mapping):
        record = record.to_dict()
    return sha256_hex(canonical_json(record))


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(format_number(value))
    elif isinstance(value, Mapping):
        _write_object(value, out)
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise LedgerError(f"cannot canonicalize a {type(value).__name__} as JSON")


def _write_object(value: Mapping[Any, Any], out: list[str]) -> None:
    for key in value:
        if not isinstance(key, str):
            raise LedgerError(f"cannot canonicalize a JSON object key {key!r}: not a string")
    out.append("{")
    for i, key in enumerate(sorted(value, key=_utf16_key)):
        if i:
            out.append(",")
        out.append(json.dumps(key, ensure_ascii=False))
        out.append(":")
        _write(value[key], out)
    out.append("}")


def _utf16_key(key: str) -> bytes:
    """Sort key: big-endian UTF-16 bytes order like UTF-16 code units."""
    return key.encode("utf-16-be", "surrogatepass")


def format_number(x: float) -> str:
    """A float as ECMAScript's ``Number.prototype.toString`` writes it.

    Raises:
        LedgerError: ``x`` is NaN or infinite (JSON has no form for them).
    """
    if not math.isfinite(x):
        raise LedgerError(f"cannot canonicalize {x!r}: JSON numbers must be finite")
    if x == 0:
        return "0"
    if x < 0:
        return "-" + format_number(-x)
    digits, n = _shortest_digits(x)
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    exponent = n - 1
    sign = "+" if exponent >= 0 else "-"
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{sign}{abs(exponent)}"


def _shortest_digits(x: float) -> tuple[str, int]:
    """``(s, n)`` with ``x == 0.s × 10**n``: the shortest round-trip digits of ``repr``."""
    mantissa, _, exp = repr(x).partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point
