"""One sampling interval's energy split among the requests in flight, by their work.

Each request did some prefill work (prompt tokens processed) and some decode
work (tokens generated) in the interval. A prefill token costs ``ratio``
decode tokens (the prefill/decode cost ratio, estimated online by
:mod:`greenml.llm.ratio`), so request *i* gets

    E × (ratio·p_i + d_i) / Σ_j (ratio·p_j + d_j)

of the interval's energy E, of which ``E·ratio·p_i/Σ`` is its prefill part.
With requests in flight but no work recorded (all of them waiting in a queue),
the energy goes by time in flight instead. With nothing in flight it is idle.
Every joule lands in exactly one place: Σ shares + idle = E (conservation).

The two baselines other tools use are here too, to score them against it:
:func:`equal_split` (every request in flight the same share, work ignored) and
:func:`whole_energy` (each request charged everything the device drew while it
ran, as TGI #3315 returns): the latter counts the same joule once per
concurrent request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from greenml.errors import ConfigError


@dataclass(frozen=True)
class Split:
    """An interval's energy as shared out.

    Attributes:
        prefill_j: Prefill energy of each request, in the order given.
        decode_j: Decode energy of each request.
        queued_j: Energy charged by time in flight (no work recorded anywhere).
        idle_j: Energy with no request in flight.
    """

    prefill_j: list[float]
    decode_j: list[float]
    queued_j: list[float]
    idle_j: float

    def energy_j(self, i: int) -> float:
        """Everything request ``i`` was charged."""
        return self.prefill_j[i] + self.decode_j[i] + self.queued_j[i]


def split_interval(
    energy_j: float,
    prefill: Sequence[float],
    decode: Sequence[float],
    ratio: float,
    *,
    presence: Sequence[float] | None = None,
) -> Split:
    """Share ``energy_j`` among requests by ``ratio × prefill + decode`` work.

    Args:
        energy_j: The interval's metered energy.
        prefill: Prompt tokens each request processed in the interval.
        decode: Tokens each request generated in the interval.
        ratio: Cost of a prefill token in decode tokens (> 0).
        presence: Seconds each request was in flight in the interval, for the
            fallback when no request did any work (default: equal).

    Raises:
        ConfigError: Mismatched lengths, a negative or non-finite work or ratio.
    """
    n = len(prefill)
    if len(decode) != n or (presence is not None and len(presence) != n):
        raise ConfigError("prefill, decode and presence must have one entry per request")
    if not ratio > 0 or ratio == float("inf"):
        raise ConfigError(f"the prefill/decode ratio must be a finite number > 0, got {ratio}")
    zeros = [0.0] * n
    if n == 0:
        return Split([], [], [], energy_j)
    if any(not (x >= 0) or x == float("inf") for x in (*prefill, *decode)):
        raise ConfigError("work must be finite and >= 0")
    weights = [ratio * p + d for p, d in zip(prefill, decode, strict=True)]
    total = sum(weights)
    if total > 0:
        scale = energy_j / total
        pre = [scale * ratio * p for p in prefill]
        dec = [scale * d for d in decode]
        _close(energy_j, pre, dec)
        return Split(pre, dec, zeros, 0.0)
    times = list(presence) if presence is not None and sum(presence) > 0 else [1.0] * n
    whole = sum(times)
    return Split(zeros, list(zeros), [energy_j * t / whole for t in times], 0.0)


def _close(energy_j: float, pre: list[float], dec: list[float]) -> None:
    """Put the float rounding residue on the largest share: the sum is ``energy_j`` exactly."""
    residue = energy_j - (sum(pre) + sum(dec))
    if residue:
        i = max(range(len(dec)), key=lambda k: pre[k] + dec[k])
        if dec[i] >= pre[i]:
            dec[i] += residue
        else:
            pre[i] += residue


def equal_split(energy_j: float, in_flight: int) -> list[float]:
    """Baseline: every request in flight the same share (work ignored)."""
    return [energy_j / in_flight] * in_flight if in_flight else []


def whole_energy(energy_j: float, in_flight: int) -> list[float]:
    """Baseline: every request in flight charged the whole interval (double counts)."""
    return [energy_j] * in_flight
