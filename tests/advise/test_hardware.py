"""Machine selection: scaling from a measured run, memory and deadline exclusion, bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.advise.candidates import Candidate, candidates, instance_candidates
from greenml.advise.grid import Grid
from greenml.advise.hardware import advise_hardware
from greenml.advise.runs import load_workload, peak_memory_bytes
from greenml.advise.workload import workload_from_flops, workload_from_run
from greenml.cli import main
from greenml.errors import ConfigError
from greenml.hardware.gpu import gpu_spec
from greenml.measure.measurement import Sample
from greenml.store.repository import Store
from tests.run_records import record

A100_TDP_W = 400.0


def a100_run(**tags: str) -> dict[str, object]:
    # 60 s on one A100 at 240 W (60 % of its TDP)
    rec = record(240.0 * 60, gpu_j=240.0 * 60, tags=dict(tags))
    rec["energy"]["components"]["gpu"]["devices"]["gpu0"]["name"] = "NVIDIA A100-SXM4-80GB"  # type: ignore[index]
    return rec


def only(*names: str) -> list[Candidate]:
    return [Candidate(n, "gpu", gpu_spec(n), 1) for n in names]


def test_a_gpu_run_scales_by_peak_ratio_and_keeps_its_power_share() -> None:
    work = workload_from_run(a100_run(precision="bf16"), {"gpu0": 30e9})
    assert work.precision == "bf16" and work.measured_power_share == pytest.approx(0.6)
    advice = advise_hardware(work, only("H100 SXM", "A100 SXM4 80GB"), objective="time")
    h100 = advice.best
    assert h100.candidate.name == "H100 SXM"
    assert h100.time_s == pytest.approx(60.0 * 312 / 989.5)
    assert h100.power_w == pytest.approx(700 * 0.6)
    a100 = advice.ranked[1]
    assert a100.time_s == pytest.approx(60.0)  # the measured GPU reproduces the measurement
    assert a100.it_energy_j == pytest.approx(240.0 * 60)
    assert advice.uncertainty_rel == pytest.approx(0.30)
    assert any("MFU the run reached" in line for line in advice.assumptions)


def test_memory_and_deadline_exclude_with_their_reason() -> None:
    work = workload_from_run(a100_run(precision="bf16"), {"gpu0": 30e9})  # 36 GB with margin
    advice = advise_hardware(
        work, only("L4", "A100 SXM4 80GB", "H100 SXM", "V100 SXM2 32GB"), deadline_s=30.0
    )
    reasons = {o.candidate.name: o.excluded for o in advice.excluded}
    assert "needs 36 GB, has 24 GB" in str(reasons["L4"])
    assert "misses the deadline" in str(reasons["A100 SXM4 80GB"])
    assert "no bf16 peak" in str(reasons["V100 SXM2 32GB"])
    assert [o.candidate.name for o in advice.ranked] == ["H100 SXM"]


def test_objectives_pick_different_machines() -> None:
    work = workload_from_flops(1e18, "fp16")
    g4dn = [c for c in instance_candidates() if c.name == "aws:g4dn.xlarge"]
    pool = only("T4", "H100 SXM") + g4dn
    grid = Grid(400.0, "test")
    by_time = advise_hardware(work, pool, objective="time", grid=grid)
    by_energy = advise_hardware(work, pool, objective="energy", grid=grid, pue=1.0)
    assert by_time.best.candidate.name == "H100 SXM"
    # fp16: H100 989.5 TFLOPS / 700 W beats T4 65 TFLOPS / 70 W per joule
    assert by_energy.best.candidate.name == "H100 SXM"
    # the same T4 on-premises at PUE 1 beats it in AWS (PUE 1.135)
    t4_only = advise_hardware(work, [pool[0], pool[2]], objective="energy", grid=grid, pue=1.0)
    assert [o.candidate.name for o in t4_only.ranked] == ["T4", "aws:g4dn.xlarge"]
    t4 = t4_only.best
    assert t4.co2_g == pytest.approx(t4.energy_j / 3.6e6 * 400.0)  # type: ignore[operator]
    by_cost = advise_hardware(work, pool, objective="cost")
    assert by_cost.best.candidate.name == "aws:g4dn.xlarge"  # the only one with a price


def test_a_cpu_run_needs_flops_and_then_uses_its_host_memory() -> None:
    cpu = record(600.0)
    with pytest.raises(ConfigError, match="give --flops"):
        workload_from_run(cpu, {"dram0": 1e8})
    work = workload_from_run(cpu, {"dram0": 1e8}, flops=1.5e11)
    assert work.memory_gb == pytest.approx(0.12)
    assert "resident memory" in work.memory_source
    tagged = workload_from_run(record(600.0, tags={"flops": "2e11"}), {})
    assert tagged.flops == 2e11 and tagged.memory_gb is None


def test_a_workload_that_fits_nothing_is_one_config_error() -> None:
    work = workload_from_flops(1e18, "fp16", memory_gb=10_000)
    with pytest.raises(ConfigError, match="fits no candidate"):
        advise_hardware(work, candidates())


def test_peak_memory_ignores_gaps() -> None:
    samples = [
        {"device": "gpu0", "memory_used_bytes": 5.0},
        {"device": "gpu0", "memory_used_bytes": float("nan")},
        {"device": "gpu0", "memory_used_bytes": 9.0},
        {"device": "cpu0", "memory_used_bytes": None},
    ]
    assert peak_memory_bytes(samples) == {"gpu0": 9.0}


@settings(max_examples=40, deadline=None)
@given(
    flops=st.floats(allow_nan=True, allow_infinity=True),
    deadline=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
)
def test_any_numbers_give_a_ranking_or_a_config_error(flops: float, deadline: float | None) -> None:
    try:
        advice = advise_hardware(workload_from_flops(flops, "fp16"), only("T4", "H100 SXM"),
                                 deadline_s=deadline)  # fmt: skip
    except ConfigError:
        return
    assert all(o.time_s is not None and math.isfinite(o.time_s) for o in advice.ranked)
    assert deadline is None or all(o.time_s <= deadline for o in advice.ranked)  # type: ignore[operator]


def test_cli_on_a_stored_run(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    with Store(url) as store:
        run_id = store.create_run(
            name="digits", command=["python", "t.py"], tags={"flops": "1.5e11"},
            started_at=1e9, pid=1, hostname="h",
        )  # fmt: skip
        memory = {"memory_used_bytes": 2e8}
        store.add_samples(run_id, [Sample("dram0", "dram", 1e9 + 1, 0.1, memory)])
        store.finish_run(
            run_id, status="completed", exit_code=0, duration_s=60.0,
            energy={"total_j": 600.0, "components": {}}, ended_at=1e9 + 60,
        )  # fmt: skip
        work, _ = load_workload(store, run_id)
    assert work.flops == 1.5e11 and work.memory_gb == pytest.approx(0.24)
    assert main(["advise", "hardware", "--db", url, "--workload", run_id, "--deadline", "1h",
                 "--zone", "DE"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "decision: run on" in out and "assumptions:" in out
    assert main(["advise", "hardware", "--flops", "1e18", "--memory-gb", "9999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("greenml: error: the workload fits no candidate") and err.count("\n") == 1
