"""instrument() on the real openai SDK against a stand-in speaking OpenAI's wire format."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from greenml.llm.remote import Workflow, instrument
from tests.llm_remote.conftest import require
from tests.llm_remote.standin import DECODE_J_PER_TOKEN, PREFILL_J_PER_TOKEN, StandIn

openai = require("openai")
MESSAGES = [{"role": "user", "content": "one two three four five"}]  # 5 tokens


def clients(standin: StandIn, variant: str, cls: Any) -> tuple[Any, Any]:
    url = standin.url(variant) + "/v1"
    plain = cls(base_url=url, api_key="k", max_retries=0)
    wrapped = instrument(cls(base_url=url, api_key="k", max_retries=0), country="US")
    return plain, wrapped


def test_sync_measured_response_unchanged(standin: StandIn) -> None:
    plain, client = clients(standin, "energy", openai.OpenAI)
    expected = plain.chat.completions.create(model="llama-3.1-8b", messages=MESSAGES, max_tokens=6)
    with Workflow("w", echo=False) as wf:
        got = client.chat.completions.create(model="llama-3.1-8b", messages=MESSAGES, max_tokens=6)
    assert type(got) is type(expected)
    assert got.model_dump() == expected.model_dump()
    assert got.choices[0].message.content == "w0 w1 w2 w3 w4 w5 "
    [call] = wf.calls
    assert call.kind == "measured" and call.sensor_method == "power-integrated"
    assert call.energy_j == pytest.approx(5 * PREFILL_J_PER_TOKEN + 6 * DECODE_J_PER_TOKEN)
    assert call.uncertainty_j == pytest.approx(0.05 * call.energy_j)
    assert call.co2eq_g == pytest.approx(call.energy_j / 3.6e6 * 400)
    assert "proxy" in call.intensity_source
    assert call.water_ml is not None and call.water_ml > 0
    assert (call.input_tokens, call.output_tokens) == (5, 6)


def test_sync_estimated_without_proxy(standin: StandIn) -> None:
    _, client = clients(standin, "plain", openai.OpenAI)
    with Workflow("w", echo=False) as wf:
        client.chat.completions.create(model="llama-3.1-8b", messages=MESSAGES, max_tokens=6)
    [call] = wf.calls
    assert call.kind == "estimated" and call.sensor_method is None
    assert "8 B active" in call.basis and "H100" in call.basis
    assert call.energy_j > 0 and call.uncertainty_j > 0
    assert call.co2eq_g is not None and "US" in call.intensity_source


def test_stream_with_usage_measured_and_chunks_unchanged(standin: StandIn) -> None:
    plain, client = clients(standin, "energy", openai.OpenAI)
    kwargs: dict[str, Any] = {
        "model": "llama-3.1-8b",
        "messages": MESSAGES,
        "max_tokens": 4,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    expected = plain.chat.completions.create(**kwargs)
    with Workflow("w", echo=False) as wf:
        stream = client.chat.completions.create(**kwargs)
        assert type(stream) is type(expected) is openai.Stream
        got = list(stream)
    want = list(expected)
    assert [c.model_dump() for c in got] == [c.model_dump() for c in want]
    [call] = wf.calls
    assert call.stream and call.kind == "measured" and call.tokens_source == "usage"
    assert call.energy_j == pytest.approx(5 * PREFILL_J_PER_TOKEN + 4 * DECODE_J_PER_TOKEN)


def test_stream_without_usage_counts_chunks_and_says_so(standin: StandIn) -> None:
    _, client = clients(standin, "plain", openai.OpenAI)
    with Workflow("w", echo=False) as wf:
        text = "".join(
            c.choices[0].delta.content or ""
            for c in client.chat.completions.create(
                model="llama-3.1-8b", messages=MESSAGES, max_tokens=7, stream=True
            )
        )
    assert text == "w0 w1 w2 w3 w4 w5 w6 "
    [call] = wf.calls
    assert call.kind == "estimated" and call.output_tokens == 7
    assert "counted from stream chunks" in call.tokens_source


def test_async_and_async_stream(standin: StandIn) -> None:
    plain, client = clients(standin, "energy", openai.AsyncOpenAI)

    async def go() -> tuple[Any, Any, list[Any]]:
        expected = await plain.chat.completions.create(model="m", messages=MESSAGES)
        got = await client.chat.completions.create(model="m", messages=MESSAGES)
        stream = await client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        assert isinstance(stream, openai.AsyncStream)
        chunks = [c async for c in stream]
        return expected, got, chunks

    with Workflow("w", echo=False) as wf:
        expected, got, chunks = asyncio.run(go())
    assert got.model_dump() == expected.model_dump()
    assert chunks[-1].usage is not None
    assert [c.kind for c in wf.calls] == ["measured", "measured"]
    assert [c.stream for c in wf.calls] == [False, True]
    total = wf.total()
    assert total.measured.calls == 2 and total.estimated.calls == 0
    assert total.measured.energy_j == pytest.approx(2 * (5 * 0.01 + 8 * 0.1))


def test_stream_left_early_is_still_accounted(standin: StandIn) -> None:
    _, client = clients(standin, "plain", openai.OpenAI)
    with Workflow("w", echo=False) as wf:
        stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        next(iter(stream))
        stream.close()
        del stream
    import gc

    gc.collect()
    [call] = wf.calls
    assert "not read to its end" in call.tokens_source


def test_instrument_refuses_other_objects_and_is_idempotent(standin: StandIn) -> None:
    from greenml.errors import ConfigError

    with pytest.raises(ConfigError):
        instrument(object())
    _, client = clients(standin, "plain", openai.OpenAI)
    assert instrument(client) is client
    with Workflow("w", echo=False) as wf:
        client.chat.completions.create(model="m", messages=MESSAGES)
    assert len(wf.calls) == 1  # wrapped once


def test_unknown_provider_host_has_carbon_unknown_with_reason(standin: StandIn) -> None:
    client = instrument(openai.OpenAI(base_url=standin.url("plain") + "/v1", api_key="k"))
    with Workflow("w", echo=False) as wf:
        client.chat.completions.create(model="m", messages=MESSAGES)
    [call] = wf.calls
    assert call.co2eq_g is None and "not known" in call.intensity_source
    assert call.water_ml is None and "unknown" in call.water_source
