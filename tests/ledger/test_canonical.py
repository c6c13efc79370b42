"""Canonical JSON follows RFC 8785 (JCS), so a record hashes the same wherever it is read."""

from __future__ import annotations

import json
import struct

import pytest

from greenml.ledger import LedgerError, canonical_json, record_sha256
from greenml.ledger.canonical import format_number


def from_bits(hex_bits: str) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(hex_bits))[0]
    return value


@pytest.mark.parametrize(
    ("bits", "expected"),
    [  # RFC 8785 Appendix B
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"),
        ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"),
        ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ],
)
def test_numbers_follow_ecmascript(bits: str, expected: str) -> None:
    assert format_number(from_bits(bits)) == expected


def test_the_rfc_example_object() -> None:
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
    assert canonical_json(value) == expected.encode("utf-8")


def test_keys_sort_by_utf16_code_units() -> None:
    keys = ["\u20ac", "\r", "\ufb33", "1", "\U0001f600", "\u0080", "\u00f6"]
    text = canonical_json(dict.fromkeys(keys, 0)).decode("utf-8")
    assert list(json.loads(text)) == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600",
                                      "\ufb33"]  # fmt: skip


def test_whole_floats_and_ints_hash_alike_so_backends_cannot_differ() -> None:
    assert canonical_json({"a": 1.0, "b": [2, -0.0]}) == canonical_json({"b": [2.0, 0], "a": 1})
    assert canonical_json(2**64 + 1) == b"18446744073709551617"  # exact, beyond doubles


def test_a_record_read_back_from_json_hashes_the_same() -> None:
    record = {"id": "abc", "x": [0.1, 1 / 3, 1e-7, 6.02e23], "s": "é ☃ \u2028", "n": None}
    for text in (json.dumps(record), json.dumps(record, indent=2, ensure_ascii=True)):
        assert record_sha256(json.loads(text)) == record_sha256(record)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), {1: "x"}, {"a": object()}, "\ud800"])
def test_what_json_cannot_hold_is_refused(bad: object) -> None:
    with pytest.raises(LedgerError):
        canonical_json(bad)
