"""Node residual and calibration error: on the DMTF Redfish mockup, and on recorded traces.

Part 1, live (sushy-static serving the DMTF public-rackmount1 mockup from
``tests/measure/node/fixtures``): a Meter reads this machine's CPU/DRAM sensors
(machine scope) beside the mockup's node meter (a constant 344 W) over windows
at different loads; per window it prints node, components and residual with its
uncertainty, then fits the node's overhead on those windows and prints the
leave-one-out (held-out) error. The mockup's node is not this machine: the
residual is the mockup's 344 W less what this machine's components drew.

Part 2, recorded traces: the Zeus NSDI'23 V100 table
(``../shared/data/zeus_traces/summary_power_v100.csv``: average GPU power and time
per epoch for each workload, batch size and power limit) gives the components of
476 runs (10 epochs each). Their node is simulated from a stated model, 120 W
static + components / 0.92 (an 80 PLUS Platinum supply near half load), read by
a meter with ±2 % noise. The fit is made on half the runs and judged on the other
half: recovered static W and factor against the truth, held-out error.

Usage::

    python benchmarks/node_residual.py [--windows N] [--seconds S]
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.measure.node.servers: the sushy-static launcher
TRACE = ROOT.parent / "shared" / "data" / "zeus_traces" / "summary_power_v100.csv"
if not TRACE.exists():
    TRACE = Path("/work/shared/data/zeus_traces/summary_power_v100.csv")
STATIC_W, EFFICIENCY, METER_NOISE = 120.0, 0.92, 0.02


def busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def live(windows: int, seconds: float) -> None:
    from tests.measure.node.servers import sushy_static

    from greenml.measure.meter import Meter
    from greenml.measure.node.balance import node_block
    from greenml.measure.node.calibration import NodeRun, fit
    from greenml.measure.node.sensor import NodeSensor
    from greenml.measure.node.spec import parse_node_meter
    from greenml.measure.sensors.discover import discover_cpu_sensors

    print("Part 1: DMTF public-rackmount1 mockup (sushy-static) beside this machine's sensors")
    runs = []
    with sushy_static() as url:
        cpu, _notes = discover_cpu_sensors(scope="machine")
        node = NodeSensor(parse_node_meter(url), period_s=0.2)
        with Meter(sensors=[*cpu, node], sample_hz=5) as meter:
            for i in range(windows):
                load = (i % 3) / 2  # idle, half, full: different component powers
                meter.begin_window(f"w{i}")
                end = time.monotonic() + seconds * (1 + i % 2)
                while time.monotonic() < end:
                    busy(0.1 * load)
                    time.sleep(0.1 * (1 - load))
                m = meter.end_window(f"w{i}")
                block = node_block(m)
                assert block is not None
                runs.append(NodeRun(m.duration_s, block["energy_j"], block["components_j"]))
                print(f"  w{i} {m.duration_s:5.2f} s  node {block['energy_j']:8.1f} J "
                      f"±{block['uncertainty_rel']:.1%}  components {block['components_j']:7.1f} J "
                      f"±{block['components_uncertainty_rel']:.0%}  residual "
                      f"{block['residual_j']:8.1f} ± {block['residual_uncertainty_j']:6.1f} J "
                      f"({block['residual_share']:.1%} of node)")  # fmt: skip
    cal = fit(runs, hostname="mockup")
    print(f"  fit: {cal.static_w:.1f} W static + {cal.factor:.3f} × components; "
          f"{cal.label} ({'held-out' if cal.held_out else 'in-sample'})")  # fmt: skip


def recorded() -> None:
    from greenml.measure.node.calibration import NodeRun, fit

    print(f"Part 2: recorded V100 traces ({TRACE.name}), node = {STATIC_W:g} W + "
          f"components / {EFFICIENCY}, meter noise ±{METER_NOISE:.0%}")  # fmt: skip
    rng = random.Random(31)
    runs = []
    with TRACE.open() as f:
        for row in csv.DictReader(f):
            duration = 10 * float(row["time_per_epoch"])
            comp = float(row["average_power"]) * duration
            node = (STATIC_W * duration + comp / EFFICIENCY) * (1 + rng.gauss(0, METER_NOISE))
            runs.append(NodeRun(duration, node, comp))
    rng.shuffle(runs)
    train, test = runs[: len(runs) // 2], runs[len(runs) // 2 :]
    cal = fit(train, hostname="v100")
    errors = [(cal.node_j(r.duration_s, r.components_j) - r.node_j) / r.node_j for r in test]
    rms = (sum(e * e for e in errors) / len(errors)) ** 0.5
    residual_share = sum(r.node_j - r.components_j for r in runs) / sum(r.node_j for r in runs)
    print(f"  {len(runs)} runs; residual {residual_share:.1%} of node on average")
    print(f"  fit on {len(train)}: static {cal.static_w:.1f} W (true {STATIC_W:g}), factor "
          f"{cal.factor:.4f} (true {1 / EFFICIENCY:.4f}); {cal.label} (leave-one-out)")  # fmt: skip
    print(f"  error on the {len(test)} held-out runs: RMS {rms:.2%} "
          f"(the meter's noise alone: {METER_NOISE:.0%})")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=1.5)
    args = parser.parse_args()
    live(args.windows, args.seconds)
    recorded()


if __name__ == "__main__":
    main()
