"""The size-based estimate: scaling, ranges, labels."""

from __future__ import annotations

import pytest

from greenml.llm.remote.energy_model import (
    DECODE_UTIL,
    GPU_POWER_W,
    OVERHEAD,
    PEAK_FLOPS_PER_S,
    estimate,
    model_size,
)


def test_more_tokens_and_bigger_models_cost_more() -> None:
    small = estimate("llama-3.1-8b", 100, 100)
    assert estimate("llama-3.1-8b", 100, 200).energy_j > small.energy_j
    assert estimate("llama-3.1-8b", 400, 100).energy_j > small.energy_j
    assert estimate("llama-3.1-70b", 100, 100).energy_j > 8 * small.energy_j
    # an output token costs more than an input token (decode is memory-bound)
    assert small.decode_j > small.prefill_j


def test_the_decode_figure_is_the_stated_formula() -> None:
    e = estimate("meta-llama/Llama-3.1-8B-Instruct", 0, 1000)
    want = 2 * 8e9 * 1000 * GPU_POWER_W / PEAK_FLOPS_PER_S / DECODE_UTIL[1] * OVERHEAD[1]
    assert e.energy_j == pytest.approx(want)
    assert e.low_j < e.energy_j < e.high_j
    assert "8 B active (published" in e.basis and "Meta Llama 3.1" in e.basis


def test_mixture_of_experts_counts_active_parameters() -> None:
    assert model_size("mistralai/Mixtral-8x7B-Instruct-v0.1").active_b == pytest.approx(12.9)
    assert model_size("deepseek-v3").active_b == 37.0
    assert model_size("gpt-4o-mini").name == "gpt-4o-mini"  # the longest pattern wins


def test_closed_and_unknown_models_get_wide_labelled_ranges() -> None:
    closed = estimate("gpt-4o-2024-08-06", 500, 500)
    unknown = estimate("my-private-model", 500, 500)
    assert closed.size.basis == "assumed range" and unknown.size.basis == "size unknown"
    assert unknown.high_j / unknown.low_j > closed.high_j / closed.low_j > 10
    assert "size unknown" in unknown.basis and "1 B–1000 B" in unknown.basis
    assert unknown.uncertainty_j > unknown.energy_j


def test_negative_tokens_are_refused() -> None:
    with pytest.raises(ValueError):
        estimate("m", -1, 0)
