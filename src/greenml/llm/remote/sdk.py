"""``instrument(client)``: an energy, CO2eq and water figure for every call of an SDK client.

Works on ``openai.OpenAI``/``AsyncOpenAI`` (chat completions, completions,
embeddings, responses) and ``anthropic.Anthropic``/``AsyncAnthropic`` (messages).
The resource's ``create`` is wrapped on that client object only; the SDK's return
value is handed back as it came (a stream is the SDK's own stream object, whose
iterator is observed as the caller reads it). A failure of greenml's accounting
is a warning, never an error in the caller's program.
"""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlparse

from greenml.llm.remote.calls import account
from greenml.llm.remote.place import Place, place_for
from greenml.llm.remote.streams import AnthropicTally, OpenAITally
from greenml.llm.remote.usage import parse_energy, parse_tokens
from greenml.llm.remote.workflow import emit, targets

log = logging.getLogger("greenml")
C = TypeVar("C")
MARK = "_greenml_instrumented"
_RESOURCES = {
    "openai": (("chat", "completions"), ("completions",), ("embeddings",), ("responses",)),
    "anthropic": (("messages",),),
}
_HOSTS = {"openai": "openai.com", "anthropic": "anthropic.com"}
_warned: set[str] = set()


def instrument(
    client: C,
    *,
    region: str | None = None,
    country: str | None = None,
    ci: float | None = None,
    wue: str | float | None = None,
) -> C:
    """Give every model call of ``client`` an energy figure; returns the same client.

    Args:
        client: An ``openai`` or ``anthropic`` client, sync or async.
        region, country, ci: Where the provider serves the model (its grid
            intensity); unset, the provider's labelled default (OpenAI and
            Anthropic's own APIs) or carbon unknown for any other server.
        wue: On-site water usage effectiveness (L/kWh or a provider name).

    Raises:
        ConfigError: Not an openai/anthropic client, or a bad place.
    """
    from greenml.errors import ConfigError

    sdk = type(client).__module__.split(".")[0]
    if sdk not in _RESOURCES:
        raise ConfigError(
            f"greenml.llm.instrument: {type(client).__name__} is not an openai or anthropic client"
        )
    if getattr(client, MARK, False):
        return client
    host = urlparse(str(getattr(client, "base_url", ""))).hostname or ""
    official = host == _HOSTS[sdk] or host.endswith("." + _HOSTS[sdk])
    place = place_for(
        sdk if official else host or sdk, region=region, country=country, ci=ci, wue=wue
    )
    for path in _RESOURCES[sdk]:
        resource: Any = client
        try:
            for name in path:
                resource = getattr(resource, name)
        except AttributeError:
            continue
        original = getattr(resource, "create", None)
        if original is None or getattr(original, MARK, False):
            continue
        wrapped = _wrap(original, sdk, place, "/".join(path))
        setattr(wrapped, MARK, True)
        resource.create = wrapped
    setattr(client, MARK, True)
    return client


def _wrap(
    original: Callable[..., Any], sdk: str, place: Place, endpoint: str
) -> Callable[..., Any]:
    """A ``create`` that observes what ``original`` returns (awaited first for async clients:
    the SDKs' async methods are not always coroutine functions to ``inspect``)."""

    async def observed(
        pending: Awaitable[Any], kwargs: dict[str, Any], started: float, t0: float
    ) -> Any:
        result = await pending
        _observe(result, sdk, place, endpoint, kwargs, started, t0)
        return result

    @functools.wraps(original)
    def create(*args: Any, **kwargs: Any) -> Any:
        started, t0 = time.time(), time.perf_counter()
        result = original(*args, **kwargs)
        if inspect.isawaitable(result):
            return observed(result, kwargs, started, t0)
        _observe(result, sdk, place, endpoint, kwargs, started, t0)
        return result

    return create


def _observe(
    result: Any,
    sdk: str,
    place: Place,
    endpoint: str,
    kwargs: dict[str, Any],
    started: float,
    t0: float,
) -> None:
    try:
        model = str(kwargs.get("model") or "")
        iterator = getattr(result, "_iterator", None) if _is_stream(result) else None
        if iterator is not None:
            tally: Any = OpenAITally(model) if sdk == "openai" else AnthropicTally(model)
            ctx = (sdk, place, kwargs, started, t0, targets(), tally)
            if hasattr(iterator, "__anext__"):
                result.__dict__["_iterator"] = _aobserve(iterator, ctx)
            else:
                result.__dict__["_iterator"] = _sobserve(iterator, ctx)
            return
        usage = getattr(result, "usage", None)
        tokens = parse_tokens(usage)
        call = account(
            provider=sdk,
            model=str(getattr(result, "model", None) or model),
            input_tokens=tokens.input_tokens or 0,
            output_tokens=tokens.output_tokens or 0,
            tokens_source="usage"
            if tokens.output_tokens is not None or endpoint == "embeddings"
            else "no usage in the response",
            energy=parse_energy(usage),
            place=place,
            started_s=started,
            duration_s=time.perf_counter() - t0,
        )
        emit(call)
    except Exception as exc:  # the caller's program is sacred
        _warn_once(
            f"{sdk}:{endpoint}", f"greenml could not account a {sdk} {endpoint} call: {exc!r}"
        )


def _is_stream(result: Any) -> bool:
    return any(cls.__name__ in ("Stream", "AsyncStream") for cls in type(result).__mro__)


def _finish(ctx: tuple[Any, ...], complete: bool) -> None:
    sdk, place, kwargs, started, t0, to, tally = ctx
    try:
        inputs, outputs, source = tally.result(_prompt_chars(kwargs) // 4)
        if not complete:
            source += "; the stream was not read to its end"
        emit(
            account(
                provider=sdk,
                model=tally.model,
                input_tokens=inputs,
                output_tokens=outputs,
                tokens_source=source,
                energy=tally.energy,
                place=place,
                started_s=started,
                duration_s=time.perf_counter() - t0,
                stream=True,
            ),
            to,
        )
    except Exception as exc:
        _warn_once(f"{sdk}:stream", f"greenml could not account a {sdk} stream: {exc!r}")


def _sobserve(iterator: Iterator[Any], ctx: tuple[Any, ...]) -> Iterator[Any]:
    complete = False
    try:
        for item in iterator:
            _feed(ctx[-1], item)
            yield item
        complete = True
    finally:
        _finish(ctx, complete)


async def _aobserve(iterator: AsyncIterator[Any], ctx: tuple[Any, ...]) -> AsyncIterator[Any]:
    complete = False
    try:
        async for item in iterator:
            _feed(ctx[-1], item)
            yield item
        complete = True
    finally:
        _finish(ctx, complete)


def _feed(tally: Any, item: Any) -> None:
    try:
        tally.feed(item)
    except Exception as exc:
        _warn_once("feed", f"greenml could not read a stream chunk: {exc!r}")


def _prompt_chars(kwargs: dict[str, Any]) -> int:
    total = 0
    for key in ("messages", "prompt", "input", "system"):
        total += len(str(kwargs.get(key) or ""))
    return total


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message)
