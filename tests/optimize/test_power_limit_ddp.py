"""Two real ranks on gloo: energy summed, time the longest, the same limit everywhere."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from greenml.optimize.objective import LimitProfile, pick_power_limit
from tests.optimize.fake_gpus import expected_choice, v100_curve

DATASETS = ("imagenet", "squad")  # alone, η = 0.5 picks 175 W and 200 W


def test_ranks_agree_on_the_limit_of_least_joint_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch.distributed")
    from tests.optimize._ddp_worker import main as rank_main

    monkeypatch.setenv("GREENML_GPU_STATE", str(tmp_path / "state.json"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    init = tmp_path / "rendezvous"
    # fork: two real processes that need not import torch again
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(
            target=rank_main,
            args=(rank, 2, str(init), dataset, str(tmp_path / f"rank{rank}.json")),
        )
        for rank, dataset in enumerate(DATASETS)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=110)
        assert proc.exitcode == 0, f"rank exited with {proc.exitcode}"
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    alone = [expected_choice(0.5, d) for d in DATASETS]
    assert alone == [175.0, 200.0]
    curves = [{w: (t, p * t) for w, p, t in v100_curve(d)} for d in DATASETS]
    joint = [
        LimitProfile(w, max(c[w][0] for c in curves), sum(c[w][1] for c in curves))
        for w in curves[0]
    ]
    expected = pick_power_limit(joint, 0.5, 250.0).power_limit_w
    assert expected != alone[1]  # rank 1 keeps a limit it would not have chosen alone
    for r in results:
        assert r["world"] == 2
        assert r["chosen_w"] == expected == r["limit_in_force_w"]
        assert r["after_close_w"] == 250.0
        for limit_w, time_s, energy_j in r["profiles"]:  # the reduced figures, on every rank
            assert time_s == pytest.approx(max(c[limit_w][0] for c in curves), rel=1e-9)
            assert energy_j == pytest.approx(sum(c[limit_w][1] for c in curves), abs=1e-3)
    assert results[0]["profiles"] == results[1]["profiles"]
