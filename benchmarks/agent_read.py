"""Reading counters through ``greenml agent`` against reading them directly, side by side.

The agent runs as root in its own process (``greenml agent start``) over a fake sysfs
(RAPL package, DRAM and psys zones; the energy files root-only) and two fake GPUs. This
process reads the same counters two ways, interleaved, median of N rounds each:

- direct: :class:`RaplSensor` and :class:`NvmlSensor` (what root, or a user granted
  read access, gets);
- through the agent: :class:`AgentSensor` over its Unix socket (what any user gets).

Two views: the CPU counters alone (a RAPL read: a few sysfs files), and a Meter window
(begin + end) over CPU, DRAM and GPUs, as ``greenml run`` pays at each window boundary.
Target: the agent costs at most 2x the direct read of a Meter window.
Run: ``sudo .venv/bin/python benchmarks/agent_read.py`` (root: it starts the agent).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.agent.fake_node import nvml
from tests.agent.harness import Node

from greenml.agent.sensor import AgentSensor
from greenml.measure.meter import Meter
from greenml.measure.sensors.nvml import NvmlSensor
from greenml.measure.sensors.rapl import RaplSensor

TARGET = 2.0
N = 2000


def median_us(fn: Callable[[], object], n: int = N) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return statistics.median(times)


ECHO = """
import socket, sys
server = socket.socket(socket.AF_UNIX)
server.bind(sys.argv[1])
server.listen(1)
print("ready", flush=True)
conn, _ = server.accept()
f = conn.makefile("rb")
for line in f:
    conn.sendall(line)
"""


def bare_round_trip_us(folder: Path) -> float:
    """The floor: one line to another Python process over a Unix socket and back."""
    path = folder / "echo.sock"
    echo = subprocess.Popen([sys.executable, "-c", ECHO, str(path)], stdout=subprocess.PIPE)
    try:
        assert echo.stdout is not None and echo.stdout.readline() == b"ready\n"
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(path))
            reader = sock.makefile("rb")
            line = b'{"v":1,"id":1,"op":"read","args":{}}\n'

            def once() -> bytes:
                sock.sendall(line)
                return reader.readline()

            return median_us(once)
    finally:
        echo.kill()
        echo.wait()


def window(meter: Meter) -> Callable[[], object]:
    def once() -> object:
        meter.begin_window("bench")
        return meter.end_window("bench")

    return once


def main() -> int:
    if os.geteuid() != 0:
        print("run it as root: it starts the agent and reads the root-only counters directly")
        return 2
    node = Node(config="requests_per_s = 1000000\n")  # the default 1000/s would refuse N reads
    try:
        node.start()
        os.environ.update(node.env())  # this process's fake GPUs: the same files as the agent's
        powercap = node.root / "sys/class/powercap"
        rapl = RaplSensor(powercap)
        gpus = NvmlSensor(nvml=nvml())
        via_cpu = AgentSensor(("cpu", "dram"), path=node.socket)
        via_all = AgentSensor(("cpu", "dram", "gpu"), path=node.socket)
        # exact_edges: both read at every edge (a Meter would leave a read slower than
        # 0.5 ms to its sampler thread, which would hide the cost measured here)
        direct_meter = Meter(sensors=[rapl, gpus], sample_hz=0, exact_edges=True)
        agent_meter = Meter(sensors=[via_all], sample_hz=0, exact_edges=True)
        rows = []
        assert set(via_all.read_energy_j()) == {"cpu0", "dram0", "gpu0", "gpu1"}
        for name, direct, agent in (
            ("RAPL read (cpu + dram)", rapl.read_energy_j, via_cpu.read_energy_j),
            ("Meter window (cpu, dram, 2 GPUs)", window(direct_meter), window(agent_meter)),
        ):
            direct(), agent()  # warm up
            d, a = [], []
            for _ in range(5):  # interleaved, so a busy moment of the machine hits both
                d.append(median_us(direct, N // 5))
                a.append(median_us(agent, N // 5))
            rows.append((name, statistics.median(d), statistics.median(a)))
        last = window(agent_meter)()
        measured = {k for c in last.components.values() for k in c.devices}  # type: ignore[attr-defined]
        assert measured == {"cpu0", "dram0", "gpu0", "gpu1"}, f"agent reads failed: {measured}"
        floor = bare_round_trip_us(node.dir)
        direct_meter.close()
        agent_meter.close()
        via_cpu.close()
    finally:
        node.close()
    load = os.getloadavg()[0]
    print(f"counter reads, median of {N} each, agent in its own process over a Unix socket "
          f"({os.cpu_count()} CPUs, load average {load:.1f})")  # fmt: skip
    for name, d, a in rows:
        print(f"  {name:34s} direct {d:8.1f} µs   via agent {a:8.1f} µs   ratio {a / d:.2f}x")
    print(f"  the floor: a bare line to another Python process over a Unix socket and back: "
          f"{floor:.1f} µs")  # fmt: skip
    ratio = rows[-1][2] / rows[-1][1]
    ok = ratio <= TARGET
    print(f"Meter window through the agent: {ratio:.2f}x a direct read "
          f"(target <= {TARGET:g}x): {'met' if ok else 'NOT met'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
