"""The Pareto front and the recommendation, on hand-made rows."""

from __future__ import annotations

from greenml.compress import Variant, pareto_front, recommend


def row(name: str, accuracy: float, energy: float, spread: float = 0.01, base: float = 95.0
        ) -> Variant:  # fmt: skip
    v = Variant(name, name, accuracy_pct=accuracy, energy_per_1k_j=energy)
    v.accuracy_drop_pp = base - accuracy
    v.energy_spread_rel = spread
    return v


def test_lowest_energy_within_the_budget_wins_over_a_cheaper_one_outside() -> None:
    rows = [row("baseline", 95.0, 10.0), row("int8", 94.2, 6.0), row("prune", 92.0, 3.0)]
    rec = recommend(rows, 1.0)
    assert rec.variant == "int8"
    assert rec.energy_saving_rel == 0.4
    assert "over the budget: prune" in rec.reason
    assert recommend(rows, 3.0).variant == "prune"


def test_a_zero_budget_keeps_the_baseline_unless_a_variant_is_as_accurate() -> None:
    rows = [row("baseline", 95.0, 10.0), row("int8", 94.9, 6.0)]
    rec = recommend(rows, 0.0)
    assert rec.variant == "baseline"
    assert rec.reason.startswith("keep the baseline")
    rows.append(row("onnx", 95.0, 8.0))
    assert recommend(rows, 0.0).variant == "onnx"


def test_failed_and_skipped_rows_are_never_recommended() -> None:
    broken = row("fp16", 95.0, 1.0)
    broken.fail("evaluate raised")
    skipped = Variant("sparse24", "2:4", status="skipped", reason="no GPU")
    rec = recommend([row("baseline", 95.0, 10.0), broken, skipped], 1.0)
    assert rec.variant == "baseline"


def test_a_saving_inside_the_noise_is_flagged() -> None:
    rows = [row("baseline", 95.0, 10.0, spread=0.1), row("int8", 95.0, 9.5, spread=0.1)]
    rec = recommend(rows, 1.0)
    assert rec.variant == "int8" and rec.within_noise
    assert "may be noise" in rec.reason
    clear = [row("baseline", 95.0, 10.0, spread=0.01), row("int8", 95.0, 5.0, spread=0.01)]
    assert not recommend(clear, 1.0).within_noise


def test_a_runner_up_inside_the_noise_is_named() -> None:
    rows = [row("baseline", 95.0, 10.0), row("onnx-int8", 95.0, 5.0, spread=0.2),
            row("prune", 94.5, 5.2, spread=0.2), row("bf16", 95.0, 9.0)]  # fmt: skip
    rec = recommend(rows, 1.0)
    assert rec.variant == "onnx-int8" and rec.tied == ("prune",)
    assert "as good within the noise: prune" in rec.reason


def test_no_recommendation_without_a_baseline_accuracy() -> None:
    base = Variant("baseline", "b")
    base.fail("evaluate raised KeyError: 'x'")
    rec = recommend([base, row("int8", 94.0, 1.0)], 1.0)
    assert rec.variant is None
    assert "KeyError" in rec.reason


def test_pareto_front_drops_dominated_points() -> None:
    rows = [
        row("baseline", 95.0, 10.0),
        row("bf16", 95.0, 12.0),  # as accurate, more energy: dominated
        row("int8", 94.0, 5.0),
        row("prune", 90.0, 6.0),  # less accurate and more energy than int8
        row("distill", 88.0, 2.0),
    ]
    assert pareto_front(rows) == ["baseline", "int8", "distill"]
