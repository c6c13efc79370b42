"""A fake ``zeus_apple_silicon`` module, as its README documents the API.

``AppleEnergyMonitor().begin_window(label)`` / ``end_window(label)`` →
``AppleEnergyMetrics`` with ``cpu_total_mj``, ``gpu_mj``, ``ane_mj``, ``dram_mj`` …
in millijoules over the window, ``None`` for a field the chip does not report
(github.com/ml-energy/zeus-apple-silicon, README "Usage Overview"). Ending a window
that was not begun raises, as the C++ library does. Power per component is
constant (watts), time comes from an injected clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any


@dataclass
class AppleEnergyMetrics:
    cpu_total_mj: float | None = None
    gpu_mj: float | None = None
    ane_mj: float | None = None
    dram_mj: float | None = None
    gpu_sram_mj: float | None = None


def fake_apple(
    watts: dict[str, float | None],
    clock: Callable[[], float],
    fail_after_s: float | None = None,
) -> Any:
    """A module whose monitor reports ``watts`` per field (``None``: not on this chip)."""

    class AppleEnergyMonitor:
        def __init__(self) -> None:
            self._open: dict[str, float] = {}

        def begin_window(self, label: str) -> None:
            self._open[label] = clock()

        def end_window(self, label: str) -> AppleEnergyMetrics:
            if label not in self._open:
                raise RuntimeError(f"no window named {label}")
            now = clock()
            if fail_after_s is not None and now >= fail_after_s:
                raise RuntimeError("IOReport sample failed")
            seconds = now - self._open.pop(label)
            values = {k: None if w is None else w * seconds * 1000.0 for k, w in watts.items()}
            return AppleEnergyMetrics(**values)

    return SimpleNamespace(AppleEnergyMonitor=AppleEnergyMonitor,
                           AppleEnergyMetrics=AppleEnergyMetrics)  # fmt: skip


M2_WATTS: dict[str, float | None] = {"cpu_total_mj": 6.0, "gpu_mj": 9.0, "ane_mj": 1.5,
                                      "dram_mj": 0.5}  # fmt: skip


def m2_mac() -> Any:
    """An M2 at constant power on the real monotonic clock (``GREENML_FAKE_APPLE`` hook)."""
    import time

    return fake_apple(M2_WATTS, time.monotonic)
