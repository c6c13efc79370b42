"""The GPU validation scripts (benchmarks/gpu/) run end to end in CPU smoke mode.

They are meant for a real GPU (issue 36) but would rot unseen between device runs:
here every part runs through the real driver on the CPU against the fake NVML of
tests/benchmarks/fake_gpu.py, and its figures are checked for what the fake makes
knowable (a 1-s window of the Meter equals the fake's counter; power integration is
off under the fake's bursty trace; the resume is bitwise identical; the sweep
recommends something cheaper than naive fp32). Figures about a GPU mean nothing here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# The smoke run of all the parts (one fixture) takes about a minute on an idle 2-core
# machine and several on a busy one: more than the suite's 120 s per test.
pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "benchmarks" / "gpu" / "run_all.py"
CORE_PARTS = ["meter_vs_counter", "sweep", "overhead", "resilience_cuda", "controls_dry_run"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """HOME and the XDG folders of the scripts' processes: nothing lands in the user's."""
    return tmp_path_factory.mktemp("home")


def _env(home: Path) -> dict[str, str]:
    src = str(REPO / "src")
    path = os.environ.get("PYTHONPATH")
    return dict(
        os.environ,
        PYTHONPATH=f"{src}{os.pathsep}{path}" if path else src,
        HOME=str(home),
        XDG_DATA_HOME=str(home / "data"),
        XDG_STATE_HOME=str(home / "state"),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_CACHE_HOME=str(home / "cache"),
    )


def _run_all(
    out: Path, home: Path, *args: str, timeout: float = 800
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DRIVER), str(out), *args],
        capture_output=True,
        text=True,
        env=_env(home),
        cwd=REPO,
        timeout=timeout,
    )


def _parts(out: Path) -> dict[str, Any]:
    data = json.loads((out / "results.json").read_text())
    assert data["smoke"] is True
    parts: dict[str, Any] = data["parts"]
    return parts


def _log(out: Path) -> str:
    return (out / "log.txt").read_text()


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Path:
    out = tmp_path_factory.mktemp("gpu-smoke")
    proc = _run_all(out, home, *CORE_PARTS, "--cpu-smoke")
    assert proc.returncode == 0, proc.stderr
    return out


def test_every_core_part_succeeds_and_writes_its_files(smoke_run: Path) -> None:
    parts = _parts(smoke_run)
    assert list(parts) == CORE_PARTS
    bad = {name: p["status"] for name, p in parts.items() if p["status"] != "ok"}
    assert not bad, f"{bad}\n{_log(smoke_run)[-4000:]}"
    assert sorted(p.name for p in smoke_run.iterdir()) == ["log.txt", "results.json", "tables.md"]
    tables = (smoke_run / "tables.md").read_text()
    assert tables.count("|---|") >= 8  # Markdown tables
    for block in tables.split("\n\n"):
        rows = [line for line in block.splitlines() if line.startswith("|")]
        cells = {len(re.split(r"(?<!\\)\|", row)) for row in rows}
        assert len(cells) <= 1, f"a table with rows of different widths:\n{block}"


def test_meter_matches_the_fake_counter_and_power_integration_does_not(smoke_run: Path) -> None:
    figures = _parts(smoke_run)["meter_vs_counter"]["figures"]
    assert figures["environment"]["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert figures["device"]["method"] == "counter"
    bursty = figures["bursty"]
    # Smoke windows are ten times shorter: "10 s" is 1 s here. The fake counter is exact;
    # what is left is the time between the script's read and the Meter's on a busy CPU.
    assert bursty["10 s"]["rel_error"]["meter"]["max_abs"] < 0.03
    # The fake power steps every 0.25 s: 10 Hz sampling misses part of it.
    assert bursty["1 s"]["rel_error"]["power 10 Hz"]["mean_abs"] > 0.001
    assert figures["update_period"]["counter"]["changes"] > 10


def test_resume_after_sigterm_is_bitwise_identical(smoke_run: Path) -> None:
    figures = _parts(smoke_run)["resilience_cuda"]["figures"]
    assert figures["interrupted_exit"] == 75
    assert figures["emergency_logged"] is True
    assert figures["resumed_from"] > figures["sigterm_after_step"]
    assert figures["bitwise_identical"] is True, figures["differences"]


def test_sweep_recommends_a_cheaper_configuration_than_naive_fp32(smoke_run: Path) -> None:
    figures = _parts(smoke_run)["sweep"]["figures"]
    assert figures["naive"]["config"]["precision"] == "fp32"
    assert figures["recommended"]["energy_per_sample_j"] <= figures["naive"]["energy_per_sample_j"]


def test_controls_plan_in_dry_run_and_change_nothing(smoke_run: Path) -> None:
    figures = _parts(smoke_run)["controls_dry_run"]["figures"]
    assert figures["unchanged"] is True
    plan = figures["runs"]["set-limit --dry-run"]["json"]
    assert plan["dry_run"] is True
    assert plan["changes"][0]["to_w"] == plan["changes"][0]["from_w"] - 100
    assert figures["runs"]["lock-clocks --dry-run"]["json"]["dry_run"] is True


def test_overhead_compares_all_variants(smoke_run: Path) -> None:
    figures = _parts(smoke_run)["overhead"]["figures"]
    assert set(figures["variants"]) == {
        "plain",
        "window/step (sync)",
        "window/step (no sync)",
        "sampler 10 Hz",
    }
    assert all(v["median"] > 0 for v in figures["variants"].values())
    assert figures["window_pair_us"] > 0


def test_llm_serving_measures_tokens_against_the_counter(tmp_path: Path, home: Path) -> None:
    if importlib.util.find_spec("openai") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the openai package is needed (the llm extra)")
        pytest.skip("the openai package is not installed")
    proc = _run_all(tmp_path, home, "llm_serving", "--cpu-smoke")
    assert proc.returncode == 0, proc.stderr
    part = _parts(tmp_path)["llm_serving"]
    assert part["status"] == "ok", _log(tmp_path)[-3000:]
    figures = part["figures"]
    for streams in (1, 8, 32):
        level = figures[f"streams_{streams}"]
        assert level["ok"] == level["requests"], level["errors"]
        assert level["output_tokens"] == 64 * level["requests"]
        assert level["counter_span_j"] > 0
    assert "proxy" in figures


def test_without_a_gpu_a_part_says_so_and_exits_0(tmp_path: Path, home: Path) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks/gpu/overhead.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=_env(home),
        cwd=REPO,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "no GPU visible" in proc.stdout
    assert json.loads((tmp_path / "overhead.json").read_text())["status"] == "skipped"


def test_an_unknown_part_is_a_user_error(tmp_path: Path, home: Path) -> None:
    proc = _run_all(tmp_path, home, "meter", timeout=30)
    assert proc.returncode == 2
    assert "unknown part(s): meter" in proc.stderr
