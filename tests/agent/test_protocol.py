"""The protocol parser: every line is a checked request or a refusal with a reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from greenml.agent.protocol import (
    MAX_MESSAGE_BYTES,
    OPS,
    Request,
    encode,
    parse_answer,
    parse_request,
    refusal,
    request_line,
)
from greenml.errors import AgentRefused

CODES = {"bad-request", "version", "size", "rate", "policy", "unavailable", "internal"}
FIGURES = {"cases": 0, "refusals": 0, "accepted": 0, "crashes": 0}


def _parse(line: bytes) -> Request | None:
    FIGURES["cases"] += 1
    try:
        request = parse_request(line)
    except AgentRefused as exc:
        FIGURES["refusals"] += 1
        assert exc.code in CODES and str(exc)
        return None
    except Exception:  # pragma: no cover - what the fuzz test looks for
        FIGURES["crashes"] += 1
        raise
    FIGURES["accepted"] += 1
    assert request.op in OPS and set(request.args) <= set(OPS[request.op])
    return request


def test_a_request_round_trips() -> None:
    line = request_line("set_power_limit", {"gpu": 0, "watts": 200, "why": "tuning"}, 3, "tok")
    request = parse_request(line.rstrip(b"\n"))
    assert request == Request("set_power_limit", {"gpu": 0, "watts": 200.0, "why": "tuning"}, 3,
                              "tok")  # fmt: skip


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        (b"not json", "not a JSON line"),
        (b"[1, 2]", "a request is a JSON object"),
        (b'{"v": 2, "op": "hello"}', "protocol version 1 only"),
        (b'{"v": 1, "op": "exec", "args": {"cmd": "id"}}', "unknown operation"),
        (b'{"v": 1, "op": "hello", "shell": "rm -rf /"}', "unknown key 'shell'"),
        (b'{"v": 1, "op": "read", "args": {"path": "/etc/shadow"}}', "read takes no argument"),
        (b'{"v": 1, "op": "set_power_limit", "args": {"gpu": 0}}', "needs watts"),
        (b'{"v": 1, "op": "set_power_limit", "args": {"gpu": 0, "watts": NaN}}', "not a JSON"),
        (b'{"v": 1, "op": "set_power_limit", "args": {"gpu": -1, "watts": 9}}', "not a valid"),
        (b'{"v": 1, "op": "job_start", "args": {"job": "1; reboot", "uid": 5}}', "not a valid job"),
        (b'{"v": true, "op": "hello"}', "protocol version"),
    ],
)
def test_bad_requests_are_refused_with_the_reason(message: bytes, reason: str) -> None:
    with pytest.raises(AgentRefused, match=reason):
        parse_request(message)


def test_a_message_over_the_limit_is_refused_unread() -> None:
    big = b'{"v": 1, "op": "hello", "id": "' + b"x" * MAX_MESSAGE_BYTES + b'"}'
    with pytest.raises(AgentRefused, match="over 4096 bytes") as caught:
        parse_request(big)
    assert caught.value.code == "size"


def test_a_refusal_reaches_the_client_as_agent_refused() -> None:
    line = encode(refusal(4, "gpu1 is not your job's", "policy"))
    with pytest.raises(AgentRefused, match="gpu1 is not your job's") as caught:
        parse_answer(line, 4)
    assert caught.value.code == "policy"


@settings(max_examples=600)
@given(st.binary(max_size=600))
def test_fuzz_random_bytes_never_crash_the_parser(line: bytes) -> None:
    _parse(line)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=5,
)
_arg_names = st.sampled_from(sorted({a for args in OPS.values() for a in args} | {"cmd", "path"}))
_requests = st.fixed_dictionaries(
    {"v": st.sampled_from([1, 1, 1, 2, "1", True]), "op": st.sampled_from([*OPS, "exec", ""])},
    optional={
        "id": st.integers() | st.text(max_size=80),
        "args": st.dictionaries(_arg_names, _values, max_size=4) | _values,
        "token": st.text(max_size=140) | st.integers(),
        "extra": _values,
    },
)


@settings(max_examples=600)
@given(_requests)
@example({"v": 1, "op": "set_power_limit", "args": {"hold": []}})  # found by this test
@example({"v": 1, "op": "read", "args": {"components": [["cpu"]]}})
def test_fuzz_random_json_requests_are_checked_or_refused(message: dict[str, object]) -> None:
    request = _parse(json.dumps(message).encode())
    if request is not None:
        assert message["v"] == 1 and message["op"] in OPS


def test_zz_print_parser_fuzz_figures() -> None:
    """The figures for the closing note (run after the fuzz tests of this module)."""
    print(f"\nprotocol parser fuzz: {FIGURES}")
    assert FIGURES["crashes"] == 0
