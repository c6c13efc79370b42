"""diagnose_run and the CLI on hand-built runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import greenml.cli.app
from greenml.cli import main
from greenml.diagnose.run import diagnose_run
from greenml.errors import ConfigError
from greenml.store import open_store
from greenml.store.repository import Store
from tests.diagnose.builders import make_run, phases


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(str(tmp_path / "runs.sqlite"))
    yield s
    s.close()


def test_idle_energy_by_hand(store: Store) -> None:
    # 100 s busy at 300 W, 100 s idle at 60 W, 1 Hz: 99 idle intervals of 60 J + the last.
    samples = phases("gpu0", [(100, 300.0, 0.9), (100, 60.0, 0.05)])
    run = make_run(store, samples, gpu_names={"gpu0": "NVIDIA H100 80GB HBM3"}, usd_per_kwh=0.2)
    d = diagnose_run(store, run, runs_per_year=100)
    (idle,) = d.of_kind("idle")
    assert idle.energy_at_stake_j == pytest.approx(99 * 60.0)
    assert idle.usd_at_stake == pytest.approx(99 * 60.0 / 3.6e6 * 0.2)
    assert idle.energy_per_year_j == pytest.approx(99 * 60.0 * 100)
    assert not d.of_kind("underused")


def test_utilization_only_is_flagged(store: Store) -> None:
    samples = phases("gpu0", [(50, 200.0, 1.0), (50, 100.0, 0.3)], gauge="utilization")
    d = diagnose_run(store, make_run(store, samples))
    (under,) = d.of_kind("underused")
    assert under.energy_at_stake_j == pytest.approx(49 * 100.0)
    assert "overstates" in under.evidence
    assert any("overstates" in n for n in d.notes)


def test_cpu_only_run(store: Store) -> None:
    samples = phases("cpu0", [(60, 50.0, 0.05), (60, 120.0, 0.9)], component="cpu",
                     gauge="utilization")  # fmt: skip
    d = diagnose_run(store, make_run(store, samples))
    assert d.analysed == "cpu" and "no GPU" in d.notes[0]
    assert d.of_kind("idle")[0].energy_at_stake_j == pytest.approx(59 * 50.0 + 85.0)


def test_input_bound_from_samples(store: Store) -> None:
    gpu = phases("gpu0", [(20, 300.0, 0.9), (20, 80.0, 0.02)] * 3)
    cpu = phases("cpu0", [(20, 40.0, 0.2), (20, 90.0, 0.95)] * 3, component="cpu",
                 gauge="utilization")  # fmt: skip
    d = diagnose_run(store, make_run(store, gpu + cpu))
    (stall,) = d.of_kind("input-bound")
    # Idle intervals with busy CPU: 3 × 19 of 80 J, and 2 edges into busy of (80+300)/2 J.
    assert stall.energy_at_stake_j == pytest.approx(57 * 80.0 + 2 * 190.0)


def test_rightsizing_a100_to_smaller(store: Store) -> None:
    samples = phases("gpu0", [(100, 160.0, 0.2)], memory=10e9)
    run = make_run(store, samples, gpu_names={"gpu0": "NVIDIA A100-SXM4-80GB"})
    (f,) = diagnose_run(store, run).of_kind("rightsizing")
    assert f.figures["current"] == "A100 SXM4 80GB"
    assert f.figures["candidate"] == "L4"
    assert "Assumes throughput" in f.evidence
    ratio = (72 * (0.25 + 0.75 * 312 * 0.2 / 121)) / (400 * (0.25 + 0.75 * 0.2))
    assert f.energy_at_stake_j == pytest.approx(99 * 160.0 * (1 - ratio), rel=0.02)


def test_fp32_and_location(store: Store) -> None:
    samples = phases("gpu0", [(50, 300.0, 0.8)], memory=70e9)
    run = make_run(store, samples, gpu_names={"gpu0": "H100"}, tags={"precision": "fp32"},
                   carbon_g_per_kwh=700.0)  # fmt: skip
    d = diagnose_run(store, run, candidates=["GB"])
    assert d.of_kind("precision")[0].energy_at_stake_j == pytest.approx(49 * 300 * 0.8 * 0.5)
    loc = d.of_kind("location")[0]
    assert loc.co2_g_at_stake == pytest.approx(2.0 * (700.0 - loc.figures["candidate_g_per_kwh"]))


def test_no_samples_is_config_error(store: Store) -> None:
    run = make_run(store, [])
    with pytest.raises(ConfigError, match="has no power timeline"):
        diagnose_run(store, run)


def test_cli(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setitem(greenml.cli.app.COMMANDS, "diagnose", "greenml.cli.diagnose:diagnose")
    run = make_run(store, phases("gpu0", [(100, 300.0, 0.9), (100, 60.0, 0.05)]))
    db = str(tmp_path / "runs.sqlite")
    assert main(["diagnose", run, "--db", db, "--idle-below", "20%"]) == 0
    assert "idle" in capsys.readouterr().out
    assert main(["diagnose", run, "--db", db, "--json"]) == 0
    assert '"kind": "idle"' in capsys.readouterr().out
    assert main(["diagnose", run, "--db", db, "--idle-below", "lots"]) == 2
    assert "percentage" in capsys.readouterr().err
    assert main(["diagnose", run, "--db", db, "--candidate-location", "FR", "--json"]) == 0
    new = capsys.readouterr()
    assert main(["diagnose", run, "--db", db, "--candidate", "FR", "--json"]) == 0
    old = capsys.readouterr()  # the old spelling still works and says the new one
    assert old.err == "greenml: --candidate is now --candidate-location\n" and new.err == ""
    assert json.loads(old.out)["findings"] == json.loads(new.out)["findings"]
    empty = make_run(store, [])
    assert main(["diagnose", empty, "--db", db]) == 2
    assert "no power timeline" in capsys.readouterr().err


def test_a_straggling_rank_is_found_with_the_energy_spent_waiting(store: Store) -> None:
    from datetime import datetime, timezone

    from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement

    samples = phases("gpu0", [(20, 300.0, 0.9)]) + phases("gpu1", [(20, 300.0, 0.9)])
    run = make_run(store, samples, gpu_names={"gpu0": "NVIDIA H100", "gpu1": "NVIDIA H100"})
    windows = []
    for step in range(5):
        for rank, seconds in ((0, 1.0), (1, 1.5)):  # rank 1 is slower: rank 0 waits 0.5 s
            energy = 300.0 * seconds  # 300 W while working
            device = DeviceEnergy(energy, "counter", 0.05, "NVIDIA H100")
            windows.append(Measurement(
                f"step/rank{rank}",
                datetime.fromtimestamp(1.7e9 + 2 * step, tz=timezone.utc),
                seconds,
                {"gpu": ComponentEnergy({f"gpu{rank}": device})},
            ))  # fmt: skip
    store.add_windows(run, windows)
    (straggler,) = diagnose_run(store, run).of_kind("straggler")
    assert straggler.title == "rank 1 sets the pace of 5 steps"
    assert straggler.energy_at_stake_j == pytest.approx(5 * 0.5 * 300.0)


def test_scaling_across_runs_of_the_same_job(store: Store) -> None:
    runs = {}
    for devices, seconds in ((1, 100), (2, 60), (4, 40)):
        names = {f"gpu{i}": "NVIDIA H100" for i in range(devices)}
        samples = [s for k in names for s in phases(k, [(seconds + 1, 300.0, 0.9)])]
        runs[devices] = make_run(store, samples, gpu_names=names, name="job")
    (scaling,) = diagnose_run(store, runs[4]).of_kind("scaling")
    # speedup at 4 devices: 100 s / 40 s = 2.5, i.e. 62 % of the ideal 4
    assert scaling.title == "parallel efficiency 62% at 4 devices"
    assert scaling.severity == "medium"
    assert not diagnose_run(
        store, make_run(store, phases("gpu0", [(5, 1.0, 0.9)]), name="solo")
    ).of_kind("scaling")


def test_communication_marked_by_the_program_is_measured(store: Store) -> None:
    from datetime import datetime, timezone

    from greenml.measure.measurement import ComponentEnergy, DeviceEnergy, Measurement

    run = make_run(store, phases("gpu0", [(10, 300.0, 0.9)]), gpu_names={"gpu0": "NVIDIA H100"})

    def window(name: str, seconds: float) -> Measurement:
        device = DeviceEnergy(300.0 * seconds, "counter", 0.05, "NVIDIA H100")
        start = datetime.fromtimestamp(1.7e9, tz=timezone.utc)
        return Measurement(name, start, seconds, {"gpu": ComponentEnergy({"gpu0": device})})

    store.add_windows(run, [window("compute", 3.0), window("comm", 1.0)] * 2)
    (comm,) = diagnose_run(store, run).of_kind("communication")
    assert comm.title == "25% of step time is communication"
    assert comm.energy_at_stake_j == pytest.approx(2 * 300.0)


def test_a_short_run_shows_its_stored_energy_and_withholds_what_two_samples_cannot_say(
    tmp_path: Path,
) -> None:
    """A 1.2-s run busy for its first 0.35 s: diagnose repeats the stored figure and
    does not call the CPU idle 100 % of the time on two samples."""
    import subprocess
    import sys

    env = {**os.environ, "GREENML_DB": str(tmp_path / "runs.db")}
    busy = "import time\nt = time.time()\nwhile time.time() - t < 0.35: pass\ntime.sleep(0.85)\n"
    done = subprocess.run([sys.executable, "-m", "greenml", "run", "-q", "--gpus", "none",
                           "--", sys.executable, "-c", busy],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open_store(str(tmp_path / "runs.db")) as store:
        run_id = store.list_runs(limit=1)[0]["id"]
        record = store.get_record(run_id)
        result = diagnose_run(store, run_id)
    assert result.energy_j == pytest.approx(record["energy"]["components"]["cpu"]["energy_j"])
    assert result.duration_s == pytest.approx(record["duration_s"])
    assert not [f for f in result.findings if f.kind in ("idle", "underused")]
    assert any("withheld" in n and "needed" in n for n in result.notes), result.notes


def test_low_mfu_is_flagged_with_its_cost(store: Store) -> None:
    samples = phases("gpu0", [(100, 300.0, 0.9)])
    run = make_run(store, samples, gpu_names={"gpu0": "NVIDIA A100-SXM4-80GB"})
    block = {"status": "ok", "method": "counted", "flops": 1.56e15, "mfu": 0.05,
             "flops_per_s": 1.56e13, "peak_flops_per_s": 312e12, "precision": "bf16",
             "peak_source": "gpus.csv: A100 SXM4 80GB dense bf16 peak × 1"}  # fmt: skip
    store.update_extra(run, {"flops": block})
    d = diagnose_run(store, run)
    (low,) = d.of_kind("low-mfu")
    gpu_j = store.get_record(run)["energy"]["components"]["gpu"]["energy_j"]
    assert low.energy_at_stake_j == pytest.approx(gpu_j * (1 - 0.05 / 0.40))
    assert "5.0%" in low.title and "dense peak" in low.evidence
    store.update_extra(run, {"flops": {**block, "mfu": 0.35}})
    assert not diagnose_run(store, run).of_kind("low-mfu")
