"""instrument() on the real anthropic SDK against a stand-in speaking the Messages API."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from greenml.llm.remote import Workflow, instrument
from tests.llm_remote.conftest import require
from tests.llm_remote.standin import DECODE_J_PER_TOKEN, PREFILL_J_PER_TOKEN, StandIn

anthropic = require("anthropic")
MESSAGES = [{"role": "user", "content": "one two three"}]  # 3 tokens


def pair(standin: StandIn, variant: str, cls: Any) -> tuple[Any, Any]:
    url = standin.url(variant)
    plain = cls(base_url=url, api_key="k", max_retries=0)
    return plain, instrument(cls(base_url=url, api_key="k", max_retries=0), country="US")


def test_sync_measured_and_unchanged(standin: StandIn) -> None:
    plain, client = pair(standin, "energy", anthropic.Anthropic)
    kwargs: dict[str, Any] = {"model": "claude-sonnet-4", "max_tokens": 5, "messages": MESSAGES}
    expected = plain.messages.create(**kwargs)
    with Workflow("w", echo=False) as wf:
        got = client.messages.create(**kwargs)
    assert type(got) is type(expected) and got.model_dump() == expected.model_dump()
    [call] = wf.calls
    assert call.kind == "measured" and call.provider == "anthropic"
    assert call.energy_j == pytest.approx(3 * PREFILL_J_PER_TOKEN + 5 * DECODE_J_PER_TOKEN)


def test_stream_events_unchanged_and_usage_read(standin: StandIn) -> None:
    plain, client = pair(standin, "energy", anthropic.Anthropic)
    kwargs: dict[str, Any] = {
        "model": "claude-sonnet-4",
        "max_tokens": 4,
        "messages": MESSAGES,
        "stream": True,
    }
    want = [e.model_dump() for e in plain.messages.create(**kwargs)]
    with Workflow("w", echo=False) as wf:
        stream = client.messages.create(**kwargs)
        assert isinstance(stream, anthropic.Stream)
        got = [e.model_dump() for e in stream]
    assert got == want
    [call] = wf.calls
    assert (
        call.stream
        and call.kind == "measured"
        and (call.input_tokens, call.output_tokens) == (3, 4)
    )


def test_estimated_closed_model_has_the_assumed_range(standin: StandIn) -> None:
    _, client = pair(standin, "plain", anthropic.Anthropic)
    with Workflow("w", echo=False) as wf:
        client.messages.create(model="claude-sonnet-next", max_tokens=8, messages=MESSAGES)
    [call] = wf.calls
    assert call.kind == "estimated" and "assumed range" in call.basis
    assert call.uncertainty_j > call.energy_j  # a wide range: the size is not published


def test_async_and_async_stream(standin: StandIn) -> None:
    _, client = pair(standin, "plain", anthropic.AsyncAnthropic)

    async def go() -> list[Any]:
        await client.messages.create(model="claude-haiku", max_tokens=3, messages=MESSAGES)
        stream = await client.messages.create(
            model="claude-haiku", max_tokens=6, messages=MESSAGES, stream=True
        )
        assert isinstance(stream, anthropic.AsyncStream)
        return [e async for e in stream]

    with Workflow("w", echo=False) as wf:
        events = asyncio.run(go())
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    assert [(c.kind, c.stream, c.output_tokens) for c in wf.calls] == [
        ("estimated", False, 3),
        ("estimated", True, 6),
    ]
