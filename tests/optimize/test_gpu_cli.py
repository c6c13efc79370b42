"""``greenml gpu`` and ``greenml optimize power-plan|straggler-sim`` in-process, on the fake
V100s named by GREENML_FAKE_NVML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenml.cli import main
from greenml.optimize.gpu_state import read_state
from tests.optimize.fake_gpus import FACTORY, UUIDS


@pytest.fixture(autouse=True)
def fake_gpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("GREENML_FAKE_NVML", FACTORY)
    monkeypatch.setenv("GREENML_TEST_FAKE_STATE", str(tmp_path / "fake_gpus.json"))
    monkeypatch.setenv("GREENML_GPU_STATE", str(tmp_path / "state.json"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["gpu", *args])
    out, err = capsys.readouterr()
    return code, out, err


def optimize(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["optimize", *args])
    out, err = capsys.readouterr()
    return code, out, err


def fake_limits(tmp_path: Path) -> dict[str, float]:
    path = tmp_path / "fake_gpus.json"
    return json.loads(path.read_text()) if path.exists() else {}  # type: ignore[no-any-return]


def test_limits_show_each_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "limits")
    assert code == 0
    assert "Tesla V100-PCIE-32GB" in out and "100–250 W" in out and UUIDS[1] in out
    code, out, _ = run(capsys, "limits", "--gpus", "1", "--json")
    data = json.loads(out)
    assert data["source"] == "NVML" and [g["uuid"] for g in data["gpus"]] == [UUIDS[1]]
    assert data["gpus"][0]["min_w"] == 100.0 and data["gpus"][0]["max_w"] == 250.0


def test_power_plan_is_a_dry_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = optimize(capsys, "power-plan", "--step-w", "50", "--max-slowdown", "5%")
    assert code == 0
    assert "profile: 250, 200, 150, 100 W" in out
    assert "least energy within 5.0% slowdown" in out and "nothing was set" in out
    code, out, _ = optimize(capsys, "power-plan", "--json", "--eta", "0.8", "--dry-run")
    plan = json.loads(out)
    assert plan["limits_w"] == [250, 225, 200, 175, 150, 125, 100] and plan["eta"] == 0.8
    assert fake_limits(tmp_path) == {}  # nothing was set


def test_set_limit_saves_originals_and_restore_puts_them_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "set-limit", "150", "--dry-run")
    assert code == 0 and "would set 250 W → 150 W" in out and fake_limits(tmp_path) == {}
    code, out, _ = run(capsys, "set-limit", "150", "--gpus", "0")
    assert code == 0 and "gpu0 Tesla V100-PCIE-32GB: set 250 W → 150 W" in out
    assert fake_limits(tmp_path) == {UUIDS[0]: 150.0}
    assert read_state(tmp_path / "state.json")[UUIDS[0]]["original_limit_w"] == 250.0
    code, out, _ = run(capsys, "restore")
    assert code == 0 and f"{UUIDS[0]}: restored to 250 W" in out
    assert fake_limits(tmp_path) == {UUIDS[0]: 250.0}
    code, out, _ = run(capsys, "restore")
    assert code == 0 and "nothing to restore" in out


def test_out_of_range_names_the_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "set-limit", "300")
    assert code == 2 and out == ""
    assert err.strip() == (
        "greenml: error: power limit 300 W is outside the allowed range of gpu0 "
        "(Tesla V100-PCIE-32GB): 100–250 W"
    )
    code, _, err = optimize(capsys, "power-plan", "--min-w", "50")
    assert code == 2 and "100–250 W" in err


def test_without_privilege_one_line_says_what_is_needed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GREENML_TEST_FAKE_PRIVILEGED", "0")
    code, _, err = run(capsys, "set-limit", "200")
    assert code == 4 and err.count("\n") == 1  # a permission is 4 (issue 28)
    assert "root or the CAP_SYS_ADMIN capability" in err and "sudo nvidia-smi -i" in err
    assert "--dry-run shows the plan" in err
    assert fake_limits(tmp_path) == {}
    code, out, _ = optimize(capsys, "power-plan")
    assert code == 0 and "nothing was set" in out  # the plan needs no privilege


def test_straggler_sim_reports_saving_and_step_time(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = optimize(capsys, "straggler-sim", "--steps", "200", "--seeds", "2")
    assert code == 0
    assert "imbalance: rank 3 ×1.15 from step 0; rank 5 ×1.08, rank 6 ×1.12 from step 100" in out
    assert "saved:" in out and "step time:" in out and "Zeus NSDI'23" in out
    assert "GPUs waiting at the collective draw 70 W" in out  # the assumption is printed
    code, out, _ = optimize(capsys, "straggler-sim", "--ranks", "4", "--steps", "200",
                            "--seeds", "2", "--slow", "1=1.2", "--json")  # fmt: skip
    data = json.loads(out)
    assert data["method"] == "simulated" and len(data["runs"]) == 2
    assert data["saved_rel"]["min"] > 0 and data["step_time_change_rel"]["max"] <= 0.01
    assert data["runs"][0]["slowdowns"] == [{"from_step": 0, "ranks": {"1": 1.2}}]


def test_straggler_sim_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = optimize(capsys, "straggler-sim", "--slow", "3:1.2")
    assert code == 2 and "RANK=FACTOR" in err
    code, _, err = optimize(capsys, "straggler-sim", "--ranks", "4")
    assert code == 2 and "must name ranks below 4" in err


@pytest.mark.parametrize("name", ["power-plan", "straggler-sim"])
def test_the_old_gpu_spellings_still_work_and_say_where_they_went(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--steps", "100", "--seeds", "1"] if name == "straggler-sim" else []
    code, out, err = run(capsys, name, *args, "--json")
    assert code == 0, err
    assert err == f"greenml: `greenml gpu {name}` is now `greenml optimize {name}`\n"
    assert json.loads(out)
    code, out, _ = run(capsys, "--help")
    assert "limits" in out and name not in out  # hidden


def test_the_old_gpu_option_still_works_and_says_the_new_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "limits", "--gpu", "0", "--gpu", "1", "--json")
    assert code == 0 and err == "greenml: --gpu INDEX is now --gpus LIST (e.g. --gpus 0,1)\n"
    assert [g["uuid"] for g in json.loads(out)["gpus"]] == [UUIDS[0], UUIDS[1]]
    code, _, err = run(capsys, "limits", "--gpus", "none")
    assert code == 2 and "leaves no GPU" in err
