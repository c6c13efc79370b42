"""``@greenml.track``: a Meter window around every call of a function."""

from __future__ import annotations

import functools
import itertools
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar, overload

from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter

F = TypeVar("F", bound=Callable[..., Any])

_default_meter: Meter | None = None
_default_lock = threading.Lock()
_track_ids = itertools.count()


def default_meter() -> Meter:
    """The process-wide Meter that :func:`track` uses, created on first use."""
    global _default_meter
    with _default_lock:
        if _default_meter is None:
            _default_meter = Meter()
        return _default_meter


@overload
def track(func: F) -> F: ...
@overload
def track(
    *,
    name: str | None = None,
    meter: Meter | None = None,
    on_measurement: Callable[[Measurement], None] | None = None,
) -> Callable[[F], F]: ...
def track(
    func: F | None = None,
    *,
    name: str | None = None,
    meter: Meter | None = None,
    on_measurement: Callable[[Measurement], None] | None = None,
) -> F | Callable[[F], F]:
    """Measure every call of a function in a window; ``fn.last_measurement`` holds the last.

    Usable bare (``@track``) or with options (``@track(name="eval")``).
    Concurrent and recursive calls each get their own window.
    """

    def decorate(fn: F) -> F:
        window_name = name or fn.__qualname__

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            m = meter or default_meter()
            key = f"{window_name}#{next(_track_ids)}"
            m.begin_window(key)
            try:
                return fn(*args, **kwargs)
            finally:
                measurement = replace(m.end_window(key), name=window_name)
                wrapper.last_measurement = measurement  # type: ignore[attr-defined]
                if on_measurement is not None:
                    on_measurement(measurement)

        wrapper.last_measurement = None  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate(func) if func is not None else decorate
