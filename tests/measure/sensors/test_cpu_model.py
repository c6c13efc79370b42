"""The CPU and DRAM models, against real processes and the real psutil."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import psutil
import pytest

from greenml.errors import ConfigError, SensorError, SensorUnavailable
from greenml.measure.measurement import DYNAMIC, STATIC, Measurement
from greenml.measure.meter import Meter
from greenml.measure.sensors.cpu_model import (
    GREEN_ALGORITHMS_W_PER_GB,
    TDP_ENV,
    CpuModelSensor,
    DramModelSensor,
    resolve_cpu_tdp,
    tdp_share,
)
from greenml.measure.sensors.process_tree import ProcessTree

BUSY = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {s}: pass\n"
IDLE = "import time\ntime.sleep({s})\n"


@pytest.fixture(autouse=True)
def _no_env_tdp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TDP_ENV, raising=False)


@pytest.fixture
def fast_rescan(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ProcessTree, "RESCAN_S", 0.0)


def _spawn(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


# ------------------------------------------------------------------ the curve


@pytest.mark.parametrize(("u", "share"), [(0.0, 0.12), (0.1, 0.32), (0.5, 0.75), (1.0, 1.02)])
def test_curve_passes_through_teads_points(u: float, share: float) -> None:
    assert tdp_share(u) == pytest.approx(share, abs=1e-12)


def test_curve_interpolates_linearly_and_clamps() -> None:
    assert tdp_share(0.05) == pytest.approx((0.12 + 0.32) / 2)
    assert tdp_share(0.3) == pytest.approx((0.32 + 0.75) / 2)
    assert tdp_share(0.75) == pytest.approx((0.75 + 1.02) / 2)
    assert tdp_share(-0.5) == pytest.approx(0.12)
    assert tdp_share(1.7) == pytest.approx(1.02)
    grid = [tdp_share(i / 100) for i in range(101)]
    assert grid == sorted(grid)


# ------------------------------------------------------------------ TDP choice


def test_matched_cpu_uses_table_tdp_times_sockets() -> None:
    tdp = resolve_cpu_tdp(cpu_name="Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz")
    assert tdp.source == "table" and tdp.uncertainty_rel == 0.3
    assert tdp.tdp_w % 150.0 == 0 and tdp.tdp_w >= 150.0  # per socket × sockets of this machine
    assert "Intel Xeon Gold 6248" in tdp.note and "socket" in tdp.note


def test_unknown_cpu_gets_labelled_per_core_fallback() -> None:
    sensor = CpuModelSensor(cpu_name="Intel(R) Xeon(R) Processor @ 2.80GHz")
    (dev,) = sensor.devices
    cores = psutil.cpu_count(logical=True)
    assert sensor.tdp.tdp_w == pytest.approx(12.0 * cores)
    assert dev.uncertainty_rel == 0.5 and dev.method == "estimated"
    assert dev.note.startswith(
        'CPU model "Intel(R) Xeon(R) Processor @ 2.80GHz" not in the TDP table; using '
        f"12 W per core × {cores} cores (Green Algorithms default); set GREENML_CPU_TDP_W "
        "to correct it"
    )
    assert f"TDP {12 * cores:g} W" in dev.name


def test_env_override_beats_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TDP_ENV, "205")
    sensor = CpuModelSensor(cpu_name="AMD EPYC 7763 64-Core Processor")
    assert sensor.tdp.tdp_w == 205.0 and sensor.tdp.source == TDP_ENV
    assert TDP_ENV in sensor.devices[0].note and "205 W" in sensor.devices[0].name
    assert sensor.devices[0].uncertainty_rel == 0.3


def test_explicit_tdp_beats_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TDP_ENV, "205")
    sensor = CpuModelSensor(tdp_w=65.0)
    assert sensor.tdp.tdp_w == 65.0 and "given" in sensor.devices[0].note


@pytest.mark.parametrize("bad", ["lots", "-3", "0"])
def test_bad_env_tdp_is_a_config_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv(TDP_ENV, bad)
    with pytest.raises(ConfigError, match=TDP_ENV):
        CpuModelSensor()


def test_bad_scope_and_pid() -> None:
    with pytest.raises(ConfigError):
        CpuModelSensor(scope="container")  # type: ignore[arg-type]
    dead = _spawn("pass")
    dead.wait()
    with pytest.raises(SensorUnavailable):
        CpuModelSensor(scope="process", pid=dead.pid, tdp_w=100.0)


# ------------------------------------------------------------------ utilization


def test_machine_scope_power_and_utilization() -> None:
    sensor = CpuModelSensor(scope="machine", tdp_w=100.0)
    time.sleep(0.2)
    power = sensor.read_power_w()["cpu0"]
    u = sensor.read_metrics()["cpu0"]["utilization"]
    assert 0.0 <= u <= 1.0
    assert power == pytest.approx(100.0 * tdp_share(u))
    assert 12.0 <= power <= 102.0


def test_machine_scope_sees_a_busy_process() -> None:
    sensor = CpuModelSensor(scope="machine", tdp_w=100.0)
    busy = _spawn(BUSY.format(s=0.6))
    busy.wait()
    u = sensor.read_metrics()["cpu0"]["utilization"]
    assert u > 0.3 / psutil.cpu_count(logical=True)


def test_process_scope_busy_child_measured_above_idle(fast_rescan: None) -> None:
    idle_child = _spawn(IDLE.format(s=5))
    busy_child = _spawn(BUSY.format(s=5))
    time.sleep(0.3)  # let the interpreters start: that is not idle
    try:
        idle = CpuModelSensor(scope="process", pid=idle_child.pid, tdp_w=100.0)
        busy = CpuModelSensor(scope="process", pid=busy_child.pid, tdp_w=100.0)
        time.sleep(0.8)
        idle_w, busy_w = idle.read_power_w()["cpu0"], busy.read_power_w()["cpu0"]
    finally:
        idle_child.kill()
        busy_child.kill()
        idle_child.wait()
        busy_child.wait()
    cores = psutil.cpu_count(logical=True)
    assert idle_w == pytest.approx(12.0, abs=2.0)  # the idle floor: 12 % of TDP
    assert busy_w > idle_w + 20.0 / cores  # one busy core is ~1/cores of the machine
    note = idle.devices[0].note
    assert "dynamic part" in note and "CPU-seconds" in note
    assert "static part" in note and "over-attributes" in note


def test_process_scope_counts_children_that_exited_between_reads() -> None:
    sensor = CpuModelSensor(scope="process", tdp_w=100.0)  # this process + its children
    subprocess.run([sys.executable, "-c", BUSY.format(s=0.5)], check=True)  # spawned and reaped
    u = sensor.read_metrics()["cpu0"]["utilization"]
    assert u > 0.15 / psutil.cpu_count(logical=True)


def _own_and_reaped_cpu_s() -> float:
    t = psutil.Process().cpu_times()
    return float(t.user + t.system + t.children_user + t.children_system)


def test_process_tree_counts_each_cpu_second_once(fast_rescan: None) -> None:
    tree = ProcessTree()
    truth_start = _own_and_reaped_cpu_s()
    assert tree.cpu_seconds() == pytest.approx(0.0, abs=0.02)  # counted from construction
    child = _spawn(BUSY.format(s=0.6))
    time.sleep(0.3)
    mid = tree.cpu_seconds()  # the child is found while it runs, and counted
    assert mid > 0.05
    child.wait()  # reaped: its time moves into our children_* fields
    end = tree.cpu_seconds()
    truth = _own_and_reaped_cpu_s() - truth_start
    assert truth > 0.1
    assert end == pytest.approx(truth, abs=0.03)  # the child's seconds once, not twice


def test_process_scope_gone_tree_is_a_sensor_error(fast_rescan: None) -> None:
    child = _spawn(IDLE.format(s=5))
    sensor = CpuModelSensor(scope="process", pid=child.pid, tdp_w=100.0)
    child.kill()
    child.wait()
    with pytest.raises(SensorError):
        sensor.read_power_w()


# ------------------------------------------------------------------ DRAM


def test_dram_machine_scope_watts_per_gb() -> None:
    sensor = DramModelSensor(scope="machine")
    (dev,) = sensor.devices
    assert (dev.key, dev.component, dev.method, dev.uncertainty_rel) == (
        "dram0",
        "dram",
        "estimated",
        0.5,
    )
    assert "Green Algorithms" in dev.note
    used = sensor.read_metrics()["dram0"]["memory_used_bytes"]
    watts = sensor.read_power_w()["dram0"]
    assert used > 0
    assert watts == pytest.approx(GREEN_ALGORITHMS_W_PER_GB * used / 2**30, rel=0.2)


def test_dram_process_scope_counts_the_tree_rss(fast_rescan: None) -> None:
    sensor = DramModelSensor(scope="process", watts_per_gb=1.0)
    me = psutil.Process(os.getpid())
    # Earlier tests may have left helpers (a multiprocessing forkserver) in the tree.
    tree = sum(p.memory_info().rss for p in [me, *me.children(recursive=True)])
    before = sensor.read_metrics()["dram0"]["memory_used_bytes"]
    assert before == pytest.approx(tree, rel=0.2)
    child = _spawn("import time\nblob = bytearray(200 * 2**20)\ntime.sleep(5)\n")
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            watts = sensor.read_power_w()["dram0"]  # the Meter's order: power, then metrics
            after = sensor.read_metrics()["dram0"]["memory_used_bytes"]
            if after > before + 150 * 2**20:
                break
            time.sleep(0.05)
        assert after > before + 150 * 2**20
        assert watts == pytest.approx(after / 2**30)
    finally:
        child.kill()
        child.wait()


# ------------------------------------------------------------------ windows over real work

# Burns a fixed amount of CPU time when told to ("go" on stdin), says "done", then idles.
BURN = (
    "import sys, time\n"
    "sys.stdin.readline()\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < {cpu_s}: pass\n"
    "print('done', flush=True)\n"
    "time.sleep(60)\n"
)


def _burner(cpu_s: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", BURN.format(cpu_s=cpu_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def _measure_burn(child: subprocess.Popen[str], meter: Meter) -> tuple[Measurement, float]:
    """One window around the child's burn: the Measurement and the CPU-seconds it burned."""
    assert child.stdin is not None and child.stdout is not None
    before = _cpu_s_of(child.pid)
    meter.begin_window("burn")
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline() == "done\n"
    m = meter.end_window("burn")
    return m, _cpu_s_of(child.pid) - before


def _cpu_s_of(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return float(t.user + t.system)


def _stop(*procs: subprocess.Popen[str]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def test_first_window_after_the_meter_starts_reads_the_work_not_the_idle_before() -> None:
    child = _burner(0.4)
    time.sleep(0.3)  # the interpreter's start-up is not the measured work
    sensor = CpuModelSensor(scope="process", pid=child.pid, tdp_w=100.0)
    meter = Meter(sensors=[sensor], sample_hz=1.0)  # its first sample reads an idle child
    try:
        m, burned = _measure_burn(child, meter)
    finally:
        meter.close()
        _stop(child)
    assert burned >= 0.38
    rate = 100.0 * (1.02 - 0.12) / psutil.cpu_count(logical=True)  # W per busy CPU
    dynamic = m.part_j(DYNAMIC)
    assert dynamic == pytest.approx(burned * rate, abs=0.03 * rate)  # ±3 clock ticks
    assert m.part_j(STATIC) == pytest.approx(12.0 * m.duration_s)
    assert dynamic is not None and m.total_j == pytest.approx(dynamic + 12.0 * m.duration_s)
    assert m.uncertainty_rel == pytest.approx(0.3)  # the model's own, nothing for sampling


def test_machine_scope_first_short_window_sees_a_busy_core() -> None:
    child = _burner(0.6)
    time.sleep(0.3)
    meter = Meter(sensors=[CpuModelSensor(scope="machine", tdp_w=100.0)], sample_hz=1.0)
    try:
        m, _ = _measure_burn(child, meter)
    finally:
        meter.close()
        _stop(child)
    # at least one of the machine's CPUs was busy all along
    u_floor = 0.9 / psutil.cpu_count(logical=True)
    assert m.average_power_w >= 100.0 * tdp_share(u_floor)


def test_the_same_work_has_the_same_dynamic_energy_beside_busy_neighbours() -> None:
    def measured(neighbours: int) -> tuple[float, float, float]:
        child = _burner(0.4)
        time.sleep(0.3)
        meter = Meter(
            sensors=[CpuModelSensor(scope="process", pid=child.pid, tdp_w=100.0)], sample_hz=1.0
        )
        busy = [_spawn(BUSY.format(s=20)) for _ in range(neighbours)]
        try:
            time.sleep(0.2 if neighbours else 0.0)
            m, burned = _measure_burn(child, meter)
        finally:
            meter.close()
            _stop(child, *busy)  # type: ignore[arg-type]
        return m.part_j(DYNAMIC) or 0.0, m.part_j(STATIC) or 0.0, burned

    rate = 100.0 * 0.9 / psutil.cpu_count(logical=True)
    alone, crowded = measured(0), measured(2)
    for dynamic, _, burned in (alone, crowded):
        assert dynamic == pytest.approx(burned * rate, abs=0.03 * rate)
    # the work's own part does not move with the neighbours (±4 clock ticks of CPU time)
    assert crowded[0] == pytest.approx(alone[0], abs=0.04 * rate)


def test_a_tree_that_has_exited_keeps_its_final_cpu_seconds(fast_rescan: None) -> None:
    child = _spawn(BUSY.format(s=0.3))
    sensor = CpuModelSensor(scope="process", pid=child.pid, tdp_w=100.0)
    time.sleep(0.5)
    last = sensor.read_usage()["cpu0"]
    child.wait()
    assert sensor.read_usage()["cpu0"] == last  # final: not an error, not lost
    with pytest.raises(SensorError):
        sensor.read_power_w()


DAEMON = (  # a shell that starts a busy grandchild in the background and leaves it orphaned
    "({py} -c 'import time\nt = time.process_time()\n"
    "while time.process_time() - t < 0.5: pass\ntime.sleep(30)' &); sleep 30"
)


def _marked(name: str, value: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["environ"]):
        with contextlib.suppress(psutil.Error):
            if (proc.info["environ"] or {}).get(name) == value:
                found.append(proc)
    return found


@pytest.mark.parametrize("marked", [True, False])
def test_descendants_that_leave_the_tree_are_followed_by_marker(
    fast_rescan: None, marked: bool
) -> None:
    name, value = "GREENML_TEST_TREE", f"{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, name: value}
    shell = subprocess.Popen(["sh", "-c", DAEMON.format(py=sys.executable)], env=env)
    tree = ProcessTree(shell.pid, f"{name}={value}" if marked else None)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # until the orphan has burned its 0.5 s
            orphans = [p for p in _marked(name, value) if p.ppid() != shell.pid and p != shell]
            if orphans and sum(p.cpu_times().user + p.cpu_times().system for p in orphans) > 0.5:
                break
            time.sleep(0.1)
        seen = tree.cpu_seconds()
    finally:
        for proc in _marked(name, value):
            with contextlib.suppress(psutil.Error):
                proc.kill()
        shell.wait()
    if marked:
        assert seen >= 0.45  # the orphaned grandchild's burn, counted
    else:
        assert seen < 0.2  # without the marker it escapes (the old behaviour)
