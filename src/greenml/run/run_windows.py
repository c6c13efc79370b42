"""The windows a ``greenml.Run`` measures on its Meter (``with run.window("epoch")``).

A window takes its own name when no open window holds it (a published window
carries it), else a unique key; a failure at either edge is a labelled gap, a
handle without a measurement, never an exception into the training code.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator

from greenml.measure.measurement import Measurement
from greenml.measure.meter import Meter
from greenml.measure.window_energy import WindowHandle


class RunWindows:
    """The open windows of one run.

    Args:
        gap: ``gap(key, message)`` notes a window that was not measured (warned once per key).
    """

    def __init__(self, gap: Callable[[str, str], None]) -> None:
        self._gap = gap
        self._ids = itertools.count()
        self._open: set[str] = set()

    @contextlib.contextmanager
    def measure(
        self, meter: Meter | None, name: str, keep: Callable[[Measurement], None] | None
    ) -> Iterator[WindowHandle]:
        """Measure the block as window ``name`` on ``meter`` (``None``: not measured).

        Args:
            keep: Called with the window's measurement (``None``: not kept, only handed out).
        """
        if meter is None:
            yield WindowHandle(name)
            return
        key = name if name not in self._open else f"{name}#{next(self._ids)}"
        try:
            meter.begin_window(key)
            self._open.add(key)
        except Exception as exc:
            self._gap(f"window {name}", f"window {name!r} not measured: {exc!r}")
            yield WindowHandle(name)
            return
        handle = WindowHandle(name)
        try:
            yield handle
        finally:
            self._open.discard(key)
            try:
                m = meter.end_window(key)
                m.name = name
                handle.measurement = m
                if keep is not None:
                    keep(m)
            except Exception as exc:
                self._gap(f"window {name}", f"window {name!r} not measured: {exc!r}")
