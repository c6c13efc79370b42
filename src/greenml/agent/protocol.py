"""The agent's wire protocol: versioned JSON lines, a fixed set of operations, strict checks.

One request per line, one answer per line, UTF-8 JSON objects::

    → {"v": 1, "id": 7, "op": "read", "args": {"power": false}, "token": "…"}
    ← {"v": 1, "id": 7, "ok": true, "result": {…}}
    ← {"v": 1, "id": 7, "ok": false, "code": "policy", "refused": "gpu1 is not your job's"}

A request names one of :data:`OPS` and nothing else: unknown keys, unknown
operations, wrong types, a line over :data:`MAX_MESSAGE_BYTES` or another
version are refused with a reason. Nothing in a request is ever executed, used
as a path or passed to a shell: arguments are numbers, GPU ordinals and short
printable texts (``why``), each checked here before any handler sees it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from greenml.errors import AgentRefused

VERSION = 1
MAX_MESSAGE_BYTES = 4096
MAX_TEXT = 200  # characters of a ``why`` or a job id
MAX_GPUS = 64

# op → {argument: kind}; a kind is checked by :func:`_check_arg`.
OPS: dict[str, dict[str, str]] = {
    "hello": {},
    "read": {"power": "bool", "components": "components"},
    "gpus": {},
    "set_power_limit": {"gpu": "ordinal", "watts": "number", "why": "text", "hold": "hold"},
    "lock_clocks": {"gpu": "ordinal", "mhz": "number", "why": "text", "hold": "hold"},
    "restore": {"gpus": "ordinals", "why": "text"},
    "job_start": {"job": "job", "uid": "uid", "gpus": "ordinals"},
    "job_end": {"job": "job"},
}
REQUIRED: dict[str, frozenset[str]] = {
    "set_power_limit": frozenset({"gpu", "watts"}),
    "lock_clocks": frozenset({"gpu", "mhz"}),
    "job_start": frozenset({"job", "uid"}),
    "job_end": frozenset({"job"}),
}
COMPONENTS = frozenset({"cpu", "dram", "psys", "gpu"})
HOLDS = frozenset({"connection", "job"})
_TOP_KEYS = frozenset({"v", "id", "op", "args", "token"})


@dataclass(frozen=True)
class Request:
    """A checked request: ``op`` is in :data:`OPS` and every argument has its kind."""

    op: str
    args: dict[str, Any] = field(default_factory=dict)
    id: int | str | None = None
    token: str | None = None


def parse_request(line: bytes) -> Request:
    """The request in one line of bytes.

    Raises:
        AgentRefused: Anything but a well-formed request (the reason and ``code`` say what).
    """
    if len(line) > MAX_MESSAGE_BYTES:
        raise AgentRefused(f"message over {MAX_MESSAGE_BYTES} bytes", "size")
    try:
        data = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise AgentRefused("not a JSON line", "bad-request") from None
    if not isinstance(data, dict):
        raise AgentRefused("a request is a JSON object", "bad-request")
    request_id = data.get("id")
    if request_id is not None and not _is_id(request_id):
        raise AgentRefused("id must be an integer or a short text", "bad-request")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise AgentRefused(f"unknown key {sorted(unknown)[0][:40]!r}", "bad-request")
    if data.get("v") != VERSION or isinstance(data.get("v"), bool):
        raise AgentRefused(f"protocol version {VERSION} only", "version")
    op = data.get("op")
    if not isinstance(op, str) or op not in OPS:
        raise AgentRefused(f"unknown operation; one of {', '.join(OPS)}", "bad-request")
    token = data.get("token")
    if token is not None and not (isinstance(token, str) and 0 < len(token) <= 128):
        raise AgentRefused("token must be a short text", "bad-request")
    raw_args = data.get("args", {})
    if not isinstance(raw_args, dict):
        raise AgentRefused("args must be an object", "bad-request")
    kinds = OPS[op]
    args: dict[str, Any] = {}
    for name, value in raw_args.items():
        if name not in kinds:
            raise AgentRefused(f"{op} takes no argument {str(name)[:40]!r}", "bad-request")
        args[name] = _check_arg(name, kinds[name], value)
    missing = REQUIRED.get(op, frozenset()) - set(args)
    if missing:
        raise AgentRefused(f"{op} needs {', '.join(sorted(missing))}", "bad-request")
    return Request(op, args, request_id, token)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) < 2**53
    return isinstance(value, str) and len(value) <= 64


def _check_arg(name: str, kind: str, value: Any) -> Any:
    """``value`` when it is of ``kind``; AgentRefused naming ``name`` otherwise."""
    bad = AgentRefused(f"{name}: not a valid {kind}", "bad-request")
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad
        return value
    if kind == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise bad
        if not math.isfinite(value) or not 0 < value < 1e6:
            raise bad
        return float(value)
    if kind in ("ordinal", "uid"):
        limit = MAX_GPUS if kind == "ordinal" else 2**32 - 1
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < limit:
            raise bad
        return value
    if kind == "ordinals":
        if not isinstance(value, list) or len(value) > MAX_GPUS:
            raise bad
        return sorted({_check_arg(name, "ordinal", v) for v in value})
    if kind in ("text", "job"):
        if not isinstance(value, str) or len(value) > MAX_TEXT or not value.isprintable():
            raise bad
        if kind == "job" and not (value and value.replace("_", "").replace("-", "").isalnum()):
            raise bad
        return value
    if kind == "hold":
        if not isinstance(value, str) or value not in HOLDS:
            raise bad
        return value
    if kind == "components":
        if not isinstance(value, list) or not all(
            isinstance(v, str) and v in COMPONENTS for v in value
        ):
            raise bad
        return sorted(set(value))
    raise bad  # pragma: no cover - every kind of OPS is handled above


def encode(message: dict[str, Any]) -> bytes:
    """One JSON line (no NaN: the protocol carries finite numbers only)."""
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def answer(request_id: int | str | None, result: dict[str, Any]) -> dict[str, Any]:
    """A successful answer."""
    return {"v": VERSION, "id": request_id, "ok": True, "result": result}


def refusal(request_id: int | str | None, reason: str, code: str) -> dict[str, Any]:
    """A refusal with its reason."""
    return {"v": VERSION, "id": request_id, "ok": False, "code": code, "refused": reason}


def request_line(
    op: str, args: dict[str, Any], request_id: int | None, token: str | None
) -> bytes:
    """The line a client sends (without an id when ``request_id`` is None)."""
    message: dict[str, Any] = {"v": VERSION, "op": op, "args": args}
    if request_id is not None:
        message["id"] = request_id
    if token:
        message["token"] = token
    return encode(message)


def parse_answer(line: bytes, request_id: int | None) -> dict[str, Any]:
    """The result of an answer line; AgentRefused for a refusal.

    Raises:
        AgentRefused: The agent refused (its reason and code), or the line is not an answer
            to ``request_id`` (code ``internal``).
    """
    try:
        data = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise AgentRefused("the agent's answer is not JSON", "internal") from None
    if not isinstance(data, dict) or data.get("v") != VERSION:
        raise AgentRefused("the agent speaks another protocol version", "version")
    if data.get("ok") is True and data.get("id") == request_id:
        result = data.get("result")
        return result if isinstance(result, dict) else {}
    if data.get("ok") is False:
        raise AgentRefused(str(data.get("refused", "refused")), str(data.get("code", "policy")))
    raise AgentRefused("the agent's answer does not match the request", "internal")
