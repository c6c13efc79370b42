"""A run's finished windows, with carbon and cost, batched out to its tracker sinks.

Windows are taken from the run's background thread, never from the training
loop, so a window costs the loop nothing more than its two Meter readings.
A window's carbon and cost use the run's effective rates so far (its own
accounting of the energy measured up to then: intensity at those hours, PUE,
price), refreshed every minute; its energy is measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from greenml.measure.measurement import Measurement

if TYPE_CHECKING:
    from greenml.accounting.run_accounting import Accounting
    from greenml.trackers.base import Sink, WindowMetrics

RATES_EVERY_S = 60.0


class WindowFeed:
    """Turns windows into :class:`~greenml.trackers.base.WindowMetrics` for the sinks.

    Args:
        accounting: The run's accounting (for the effective rates).
        sinks: Where the windows go; a sink that fails is dropped after one warning.
        warn: ``warn(key, message)``: one warning per key.
    """

    def __init__(
        self, accounting: Accounting | None, sinks: Sequence[Sink],
        warn: Callable[[str, str], None],
    ) -> None:  # fmt: skip
        self.sinks = list(sinks)
        self.g_per_kwh: float | None = None
        self.usd_per_kwh: float | None = None
        self._accounting = accounting
        self._warn = warn
        self._taken = 0
        self._steps: dict[str, int] = {}
        self._pending: list[WindowMetrics] = []
        self._rates_at = -RATES_EVERY_S

    def rates_from(self, spent: Measurement) -> None:
        """Refresh the effective rates from the run's energy so far (at most once a minute)."""
        now = time.monotonic()
        if self._accounting is None or spent.total_j <= 0 or now - self._rates_at < RATES_EVERY_S:
            return
        from greenml.accounting.run_accounting import account_safely, effective_rates

        self._rates_at = now
        rates = effective_rates(account_safely(self._accounting, spent, None), spent.total_kwh)
        self.g_per_kwh, self.usd_per_kwh = rates["g_per_kwh"], rates["usd_per_kwh"]

    def take(self, windows: Sequence[Measurement]) -> None:
        """Queue the windows not taken yet (``windows`` only grows)."""
        if not self.sinks:
            self._taken = len(windows)
            return
        from greenml.trackers.base import WindowMetrics

        for m in windows[self._taken :]:
            step = self._steps.get(m.name, 0)
            self._steps[m.name] = step + 1
            kwh = m.total_kwh
            self._pending.append(
                WindowMetrics(
                    name=m.name, step=step, end_s=m.started_at.timestamp() + m.duration_s,
                    duration_s=m.duration_s, energy_kwh=kwh,
                    co2_kg=None if self.g_per_kwh is None else kwh * self.g_per_kwh / 1000,
                    cost_usd=None if self.usd_per_kwh is None else kwh * self.usd_per_kwh,
                    energy_uncertainty_rel=m.uncertainty_rel,
                )
            )  # fmt: skip
        self._taken = len(windows)

    def flush(self) -> None:
        """Send the queued windows to every sink, one batch each."""
        batch, self._pending = self._pending, []
        if batch:
            self._each(lambda sink: sink.log_windows(batch))

    def finish(self, record: dict[str, Any] | None, statement: str | None) -> None:
        """Send what is queued, then the record and statement; the sinks close."""
        self.flush()
        self._each(lambda sink: sink.finish(record, statement))

    def _each(self, call: Callable[[Any], None]) -> None:
        for sink in list(self.sinks):
            try:
                call(sink)
            except Exception as exc:  # a tracker's failure never reaches the training loop
                self.sinks.remove(sink)
                self._warn(f"sink {sink.name}", f"greenml: {sink.name} logging stopped: {exc!r}")
