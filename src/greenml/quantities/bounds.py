"""The one check of each numeric setting, whichever source it came from.

An option, the environment, the config file and a Python argument all pass
through here, so ``GREENML_SAMPLE_HZ=nan``, ``sample_hz=1e-300`` and
``--sample-hz nan`` are refused by the same rule with the same words.
"""

from __future__ import annotations

import math
from typing import Any

from greenml.errors import ConfigError

SAMPLE_HZ_RANGE = (0.001, 100.0)
"""Samples per second a user may ask for: the sampler and NVML go no faster than 100 Hz."""
MAX_TDP_W = 10_000.0
"""No CPU package draws more: a bound that catches a typo (or 1e308) in a TDP."""


def _number(value: Any, what: str, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{what}={value!r} is not a number of {unit}")
    try:
        return float(value)
    except (ValueError, OverflowError):
        raise ConfigError(f"{what}={value!r} is not a number of {unit}") from None


def sample_hz(value: Any, what: str = "sample_hz") -> float:
    """A sampling rate in [0.001, 100] Hz (text or number; NaN and infinity refused).

    Raises:
        ConfigError: Not a number, or outside the range.
    """
    hz = _number(value, what, "Hz")
    low, high = SAMPLE_HZ_RANGE
    if not low <= hz <= high:  # `not <=` also refuses NaN
        raise ConfigError(f"{what}={value!r} must be between {low:g} and {high:g} Hz")
    return hz


def tdp_w(value: Any, what: str = "tdp_w") -> float:
    """A CPU TDP in (0, 10 000] W (text or number; NaN and infinity refused).

    Raises:
        ConfigError: Not a number, or outside the range.
    """
    watts = _number(value, what, "watts")
    if not (math.isfinite(watts) and 0 < watts <= MAX_TDP_W):
        raise ConfigError(f"{what}={value!r} must be a number of watts in (0, {MAX_TDP_W:,.0f}]")
    return watts
