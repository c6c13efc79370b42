"""Helpers shared by the resilience tests: a fake clock and the tiny model they train."""

from __future__ import annotations

from typing import Any


class Clock:
    """Fake monotonic seconds, advanced by the tests' steps (and saves)."""

    def __init__(self, start_s: float = 0.0) -> None:
        self.now_s = start_s

    def __call__(self) -> float:
        return self.now_s


def dropout_net() -> Any:
    """Linear, dropout, linear (4 → 8 → 1): its output depends on the torch RNG."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1))
