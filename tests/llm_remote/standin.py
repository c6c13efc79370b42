"""A local stand-in for the OpenAI and Anthropic HTTP APIs (their wire formats), for tests.

Paths under ``/energy`` answer as a greenml proxy would (``usage.energy`` in the
body and the final stream usage, ``X-Greenml-Energy-J``); paths under ``/plain``
as the provider itself. Tokens are words: the prompt's words are the input
tokens, ``max_tokens`` (default 8) words ``w0 w1 …`` are generated.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

PREFILL_J_PER_TOKEN = 0.01
DECODE_J_PER_TOKEN = 0.1


def energy_of(prompt: int, completion: int) -> dict[str, Any]:
    prefill, decode = PREFILL_J_PER_TOKEN * prompt, DECODE_J_PER_TOKEN * completion
    total = prefill + decode
    return {
        "energy_j": total,
        "uncertainty_j": 0.05 * total,
        "prefill_j": prefill,
        "decode_j": decode,
        "co2eq_g": total / 3.6e6 * 400.0,
        "method": "power-integrated",
    }


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(v) for v in value)
    if isinstance(value, dict):
        return _words(value.get("content")) + _words(value.get("text"))
    return 0


def _sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    body = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n".encode()


def build_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    async def chat(request: Request) -> Any:
        energy = request.path_params["variant"] == "energy"
        body = await request.json()
        model = body["model"]
        prompt = _words(body.get("messages"))
        n = int(body.get("max_tokens") or body.get("max_completion_tokens") or 8)
        words = [f"w{i} " for i in range(n)]
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": n,
            "total_tokens": prompt + n,
        }
        if energy:
            usage["energy"] = energy_of(prompt, n)
        headers = {"X-Greenml-Energy-J": str(usage["energy"]["energy_j"])} if energy else {}
        base = {"id": "chatcmpl-standin", "created": 1_700_000_000, "model": model}
        if not body.get("stream"):
            return JSONResponse(
                {
                    **base,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "".join(words)},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                },
                headers=headers,
            )
        include = bool((body.get("stream_options") or {}).get("include_usage"))

        async def events() -> AsyncIterator[bytes]:
            chunk = {**base, "object": "chat.completion.chunk"}
            yield _sse(
                {
                    **chunk,
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": ""},
                            "finish_reason": None,
                        }
                    ],
                }
            )
            for word in words:
                yield _sse(
                    {
                        **chunk,
                        "choices": [
                            {"index": 0, "delta": {"content": word}, "finish_reason": None}
                        ],
                    }
                )
            yield _sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            if include:
                yield _sse({**chunk, "choices": [], "usage": usage})
            yield _sse("[DONE]")

        return StreamingResponse(events(), media_type="text/event-stream")

    async def messages(request: Request) -> Any:
        energy = request.path_params["variant"] == "energy"
        body = await request.json()
        model = body["model"]
        prompt = _words(body.get("messages")) + _words(body.get("system"))
        n = int(body.get("max_tokens") or 8)
        words = [f"w{i} " for i in range(n)]
        usage: dict[str, Any] = {"input_tokens": prompt, "output_tokens": n}
        if energy:
            usage["energy"] = energy_of(prompt, n)
        message = {
            "id": "msg_standin",
            "type": "message",
            "role": "assistant",
            "model": model,
            "stop_reason": None,
            "stop_sequence": None,
        }
        if not body.get("stream"):
            return JSONResponse(
                {
                    **message,
                    "content": [{"type": "text", "text": "".join(words)}],
                    "stop_reason": "end_turn",
                    "usage": usage,
                }
            )

        async def events() -> AsyncIterator[bytes]:
            yield _sse(
                {
                    "type": "message_start",
                    "message": {
                        **message,
                        "content": [],
                        "usage": {"input_tokens": prompt, "output_tokens": 1},
                    },
                },
                "message_start",
            )
            yield _sse(
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                "content_block_start",
            )
            for word in words:
                yield _sse(
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": word},
                    },
                    "content_block_delta",
                )
            yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
            final = {"output_tokens": n, **({"energy": usage["energy"]} if energy else {})}
            yield _sse(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": final,
                },
                "message_delta",
            )
            yield _sse({"type": "message_stop"}, "message_stop")

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/{variant}/v1/chat/completions", chat, methods=["POST"]),
            Route("/{variant}/v1/messages", messages, methods=["POST"]),
        ]
    )


class StandIn:
    """The stand-in server on 127.0.0.1, in a thread."""

    def __init__(self) -> None:
        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        sock.close()
        config = uvicorn.Config(build_app(), host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def url(self, variant: str) -> str:
        return f"http://127.0.0.1:{self.port}/{variant}"

    def __enter__(self) -> StandIn:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("stand-in server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def serve() -> Iterator[StandIn]:
    with StandIn() as standin:
        yield standin
