"""Token counts of an OpenAI-style request and response, and where each count came from.

``usage`` blocks are read as the engine sent them (source ``usage``). A stream
without a usage chunk is counted by the proxy itself: one token per chunk that
carries generated text (``counted``: engines send one token per chunk, some
batch a few, so it is a lower bound). A prompt seen only in the request body
is estimated at four characters per token (``estimated``), until the engine's
usage replaces it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class Usage:
    """Prompt and completion tokens of a request."""

    prompt_tokens: int | None
    completion_tokens: int | None


def read_usage(doc: Any) -> Usage | None:
    """The ``usage`` block of a response or chunk, ``None`` when absent or malformed."""
    if not isinstance(doc, dict):
        return None
    usage = doc.get("usage")
    if not isinstance(usage, dict):
        return None
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    if prompt is None and completion is None:
        return None
    return Usage(prompt, completion)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def generated_tokens(chunk: Any) -> int:
    """Tokens of generated text in one stream chunk: 1 when it carries any, else 0."""
    if not isinstance(chunk, dict):
        return 0
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        return 0
    for choice in choices:
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        text = delta.get("content") if isinstance(delta, dict) else choice.get("text")
        if isinstance(text, str) and text:
            return 1
        if isinstance(delta, dict) and delta.get("tool_calls"):
            return 1
    return 0


def estimate_prompt_tokens(body: Any) -> int:
    """Prompt tokens guessed from a request body (4 characters a token)."""
    if not isinstance(body, dict):
        return 0
    chars = 0
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            chars += _text_len(content)
    for key in ("prompt", "input"):
        chars += _text_len(body.get(key))
    return max(1, round(chars / CHARS_PER_TOKEN)) if chars else 0


def _text_len(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        total = 0
        for item in value:
            if isinstance(item, dict):
                total += _text_len(item.get("text"))
            elif isinstance(item, (str, list)):
                total += _text_len(item)
            elif isinstance(item, int):
                total += CHARS_PER_TOKEN.__int__()  # a token id
        return total
    return 0


def parse_json(data: bytes) -> Any:
    """JSON, or ``None`` when the bytes are not JSON."""
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
