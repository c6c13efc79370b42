"""Picks per η and the accuracy check, on hand-made sweep results."""

from __future__ import annotations

import json
import math

import pytest

from greenml.errors import ConfigError
from greenml.optimize.objective import energy_time_cost
from greenml.optimize.sweep.grid import SweepConfig
from greenml.optimize.sweep.report import SweepResult, check_losses, recommend
from greenml.optimize.sweep.result import ConfigResult

P_MAX_W = 100.0


def done(
    precision: str,
    batch: int,
    j_per_sample: float,
    samples_per_s: float,
    losses: list[float] | None = None,
    compile: bool = False,
) -> ConfigResult:
    """A successful configuration: 1000 samples at the given J/sample and throughput."""
    samples = 1000
    return ConfigResult(
        SweepConfig(precision, batch, compile),
        steps=10,
        samples=samples,
        duration_s=samples / samples_per_s,
        energy_j=j_per_sample * samples,
        method="counter",
        uncertainty_rel=0.05,
        losses=list(losses or []),
    )


# fastest: fp32 b256 (but hungry); most frugal: fp32 b64 (but slow); b128 in between.
FAST = done("fp32", 256, j_per_sample=0.30, samples_per_s=1000.0)
FRUGAL = done("fp32", 64, j_per_sample=0.10, samples_per_s=250.0)
MIDDLE = done("fp32", 128, j_per_sample=0.14, samples_per_s=600.0)
FAILED = ConfigResult(SweepConfig("fp32", 512), status="failed", reason="OutOfMemoryError: ...")
SKIPPED = ConfigResult(SweepConfig("tf32", 64), status="skipped", reason="tf32 ... CPU")
RESULTS = [FAST, FRUGAL, MIDDLE, FAILED, SKIPPED]


def test_eta_one_picks_least_energy_and_eta_zero_the_fastest() -> None:
    assert recommend(RESULTS, 1.0, P_MAX_W).result is FRUGAL  # type: ignore[union-attr]
    assert recommend(RESULTS, 0.0, P_MAX_W).result is FAST  # type: ignore[union-attr]


def test_eta_between_trades_joules_against_p_max_seconds() -> None:
    # cost per sample = η·E + (1 − η)·P_max·T: at η = 0.5 the middle one wins
    costs = {
        r.config.batch_size: energy_time_cost(
            r.energy_per_sample_j, r.time_per_sample_s, 0.5, P_MAX_W
        )
        for r in (FAST, FRUGAL, MIDDLE)
    }
    assert costs == pytest.approx({256: 0.2, 64: 0.25, 128: 0.07 + 50 / 600})
    pick = recommend(RESULTS, 0.5, P_MAX_W)
    assert pick is not None and pick.result is MIDDLE
    assert pick.cost_per_sample_j == pytest.approx(costs[128])
    assert pick.caveat == ""  # fp32 is the reference


def test_failed_and_skipped_configurations_are_never_picked() -> None:
    assert recommend([FAILED, SKIPPED], 0.5, P_MAX_W) is None
    with pytest.raises(ConfigError, match="eta"):
        recommend(RESULTS, 1.5, P_MAX_W)


def test_a_precision_that_kept_the_loss_is_picked_with_a_caveat() -> None:
    ref = done("fp32", 64, 0.10, 250.0, losses=[2.0, 1.8, 1.6, 1.4])
    bf16 = done("bf16", 64, 0.06, 400.0, losses=[2.01, 1.81, 1.6])  # 3 steps: compared over 3
    checks = check_losses([ref, bf16])
    check = checks["bf16 b64 eager w0"]
    assert check.status == "ok" and check.steps == 3
    assert check.change_rel == pytest.approx((5.42 / 3 - 1.8) / 1.8)
    pick = recommend([ref, bf16], 1.0, P_MAX_W, checks)
    assert pick is not None and pick.result is bf16
    assert "confirm on validation accuracy" in pick.caveat and "0.4%" in pick.caveat


def test_a_precision_that_changed_the_loss_is_flagged_and_left_out() -> None:
    ref = done("fp32", 64, 0.10, 250.0, losses=[2.0, 1.5, 1.0])
    fp16 = done("fp16", 64, 0.05, 500.0, losses=[2.0, 1.9, 1.9])
    nan = done("bf16", 64, 0.04, 600.0, losses=[2.0, math.nan, math.nan])
    result = SweepResult([ref, fp16, nan], "cpu", P_MAX_W, "given", loss_tolerance_rel=0.05)
    checks = result.loss_checks
    assert checks["fp16 b64 eager w0"].status == "changed"
    assert "above the 5% tolerance" in checks["fp16 b64 eager w0"].message
    assert checks["bf16 b64 eager w0"].status == "changed"
    assert len(result.warnings) == 2
    assert all(p.result is ref for p in result.recommendations())  # the cheaper ones are out


def test_without_losses_or_an_fp32_twin_the_accuracy_is_unchecked() -> None:
    no_loss = done("bf16", 64, 0.06, 400.0)
    no_twin = done("bf16", 32, 0.06, 400.0, losses=[1.0])
    ref_other_mode = done("fp32", 32, 0.1, 250.0, losses=[1.0], compile=True)
    checks = check_losses([done("fp32", 64, 0.1, 250.0, [1.0]), no_loss, no_twin, ref_other_mode])
    assert checks["bf16 b64 eager w0"].status == "unchecked"
    assert "no loss returned" in checks["bf16 b64 eager w0"].message
    assert checks["bf16 b32 eager w0"].status == "unchecked"
    assert "no fp32 run" in checks["bf16 b32 eager w0"].message
    pick = recommend([no_loss], 1.0, P_MAX_W, checks)
    assert pick is not None and pick.caveat.startswith("accuracy not checked")


def test_the_result_is_strict_json_with_every_eta() -> None:
    nan = done("bf16", 64, 0.04, 600.0, losses=[math.nan])
    result = SweepResult([*RESULTS, nan], "cpu", P_MAX_W, "given")
    data = result.to_dict()
    text = json.dumps(data, allow_nan=False)  # a diverged loss must not break JSON
    assert [r["eta"] for r in data["recommendations"]] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert data["recommendations"][0]["label"] == "fp32 b256 eager w0"
    statuses = [c["status"] for c in data["configs"]]
    assert statuses == ["ok", "ok", "ok", "failed", "skipped", "ok"]
    assert data["configs"][3]["reason"].startswith("OutOfMemoryError")
    assert data["configs"][0]["energy_per_sample_j"] == pytest.approx(0.30)
    assert data["configs"][5]["loss_mean"] is None
    assert "NaN" not in text
