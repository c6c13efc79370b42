"""``greenml serve batch-curve`` and ``greenml serve cache-stats`` as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import greenml.cli.inference
from greenml.cli import main
from greenml.measure.measurement import POWER_INTEGRATED
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor
from greenml.serve.cache.response import ResponseCache

MODEL = '''
import time

def make_run():
    def run(batch_size):
        time.sleep(0.004 + 0.0004 * batch_size)  # a launch cost, then a cost per item
    return run
'''


@pytest.fixture
def script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    sensor = FakeSensor([FakeDevice("cpu0", [(0.0, 50.0)], method=POWER_INTEGRATED)])
    monkeypatch.setattr(
        greenml.cli.inference, "make_meter", lambda hz: Meter(sensors=[sensor], sample_hz=hz)
    )
    return path


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_batch_curve_json(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        ["inference", "batch-curve", f"{script}:make_run", "--batch-sizes", "1,8",
         "--latency-budget-ms", "100", "--repeats", "3", "--min-time", "0", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    curve = json.loads(out)
    one, eight = curve["points"]
    assert (one["batch_size"], eight["batch_size"]) == (1, 8)
    assert one["method"] == "power-integrated"
    # the launch cost is shared by 8 items: several times less energy per item
    assert eight["energy_j_per_item"] < one["energy_j_per_item"] / 2
    assert curve["recommendation"]["max_batch"] == 8


def test_batch_curve_table(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["inference", "batch-curve", f"{script}:make_run", "--batch-sizes", "1,4",
         "--latency-budget-ms", "1", "--repeats", "2", "--min-time", "0"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert "J/item" in out and "power-integrated" in out
    assert "note: no batch size fits 1 ms" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--batch-sizes", "1,x"], "--batch-sizes must be integers"),
        (["--batch-sizes", "0,2"], "integers >= 1"),
        (["--latency-budget-ms", "-5"], "must be > 0"),
    ],
)
def test_batch_curve_bad_options(
    script: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = run_cli(["inference", "batch-curve", f"{script}:make_run", *args], capsys)
    assert code == 2 and out == ""
    assert err.startswith("greenml: error:") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing.py:make_run", "no such script"),
        ("{script}:nothing", "has no function 'nothing'"),
        ("no_colon_here", "expected SCRIPT:FACTORY"),
        ("greenml_no_such_module:f", "cannot import"),
    ],
)
def test_batch_curve_bad_target(
    script: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    code, _, err = run_cli(["inference", "batch-curve", target.format(script=script)], capsys)
    assert code == 2 and message in err


def test_cache_stats(redis_backend: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cache = ResponseCache(redis_backend, flush_every_s=0)
    cache.put("q1", "a1", energy_j=30.0, uncertainty_rel=0.1)
    cache.put("q2", "a2", energy_j=10.0, uncertainty_rel=0.1)
    for _ in range(3):
        cache.get("q1")
    cache.get("unknown")
    url = f"redis://127.0.0.1:{redis_backend.client.connection_pool.connection_kwargs['port']}/0"
    base = ["inference", "cache-stats", "--redis", url, "--namespace", redis_backend.namespace]
    code, out, _ = run_cli([*base, "--price", "0.5", "--json"], capsys)
    assert code == 0
    stats = json.loads(out)
    assert (stats["entries"], stats["hits"], stats["misses"]) == (2, 3, 1)
    assert stats["energy_saved_j"] == pytest.approx(60.0)  # 3 hits × the 20 J mean miss
    assert stats["usd_saved"] == pytest.approx(60.0 / 3.6e6 * 0.5)
    code, out, _ = run_cli(base, capsys)
    assert code == 0
    assert "3 hits / 4 lookups (75.0 % hit rate)" in out
    assert "energy saved: 60.0 J" in out and "2 measured misses" in out


def test_cache_stats_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        ["inference", "cache-stats", "--redis", "redis://127.0.0.1:1/0", "--namespace", "x"], capsys
    )
    assert code == 2 and "Redis at 127.0.0.1:1 is unreachable" in err and err.count("\n") == 1


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(["inference", "--help"], capsys)
    assert code == 0 and "batch-curve" in out and "cache-stats" in out
