"""ASGI plumbing of the proxy: headers, bodies with a limit, SSE events, JSON errors."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Headers = list[tuple[bytes, bytes]]
JSON_TYPE = b"application/json"
HOP_BY_HOP = frozenset({
    b"connection", b"keep-alive", b"proxy-authenticate", b"proxy-authorization", b"te",
    b"trailer", b"transfer-encoding", b"upgrade", b"host", b"content-length",
})  # fmt: skip


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def query(scope: Scope) -> str:
    qs = scope.get("query_string", b"")
    return "?" + qs.decode("latin-1") if qs else ""


def forward_headers(scope: Scope, *, identity: bool) -> list[tuple[bytes, bytes]]:
    out = [(k, v) for k, v in scope.get("headers", ()) if k.lower() not in HOP_BY_HOP]
    if identity:  # the proxy reads measured bodies: ask for them uncompressed
        out = [(k, v) for k, v in out if k.lower() != b"accept-encoding"]
        out.append((b"accept-encoding", b"identity"))
    return out


def response_headers(upstream: httpx.Response, *, keep_length: bool) -> list[tuple[bytes, bytes]]:
    return [
        (k.lower(), v)
        for k, v in upstream.headers.raw
        if k.lower() not in HOP_BY_HOP or (keep_length and k.lower() == b"content-length")
    ]


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None once it passes ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        parts.append(chunk)
        more = message.get("more_body", False)
    return b"".join(parts)


def event_end(buffer: bytes) -> int:
    """Index just past the first complete SSE event in ``buffer``, or -1."""
    best = -1
    for sep in (b"\n\n", b"\r\n\r\n"):
        i = buffer.find(sep)
        if i >= 0 and (best < 0 or i + len(sep) < best):
            best = i + len(sep)
    return best


def event_data(event: bytes) -> bytes | None:
    lines = [line[5:].lstrip() for line in event.splitlines() if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


def error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


async def too_large(send: Send, limit: int) -> None:
    mb = limit / 1024 / 1024
    await respond(send, 413, error(f"request body over {mb:g} MB (--max-body-mb)", "too_large"))


async def respond(send: Send, status: int, body: bytes, ctype: bytes = JSON_TYPE) -> None:
    await send_all(send, status, [(b"content-type", ctype)], body)


async def send_all(send: Send, status: int, headers: Headers, body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
