"""``@measure_request``: energy per call of a plain function, sync or async."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from greenml.serve.requests import RequestMeter

F = TypeVar("F", bound=Callable[..., Any])


def measure_request(request_meter: RequestMeter, route: str | None = None) -> Callable[[F], F]:
    """Record every call of the decorated function as one request.

    Args:
        request_meter: Where the intervals go (and where the energy is read).
        route: Label of the calls; default: the function's qualified name.

    Example::

        @measure_request(rm, route="embed")
        async def embed(texts): ...
    """

    def decorate(fn: F) -> F:
        label: str = route or str(getattr(fn, "__qualname__", repr(fn)))
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                token = request_meter.begin(label)
                try:
                    return await fn(*args, **kwargs)
                finally:
                    request_meter.finish(token)

            return cast(F, async_wrapper)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = request_meter.begin(label)
            try:
                return fn(*args, **kwargs)
            finally:
                request_meter.finish(token)

        return cast(F, wrapper)

    return decorate
