"""A shared GPU's energy per process: greenml's SM-activity split vs the equal split.

Ground truth comes from exclusive runs. Each job is a row of the Zeus V100 power
trace (``../shared/data/zeus_traces/summary_power_v100.csv``, You et al., NSDI'23:
average power per workload and batch size at the 250 W limit). Run alone, a job
keeps the SMs busy ``u`` of the time for ``T`` seconds and the board draws
``idle + k × u``; its dynamic energy ``k × u × T`` is what the same work costs
whatever else shares the GPU. ``k`` (power at full SM activity) is the board's
250 W less idle, times a per-network intensity factor drawn once in
[1 − spread, 1] (memory-bound kernels draw less per unit of SM activity than
compute-bound ones: what an SM-activity split cannot see); ``u`` then follows from
the row's power. Assumed, not in the trace: the V100's idle draw (30 W), the
intensity spread (20 % by default, ``--spread``) and the exclusive durations (the
epoch time, capped at 900 s).

Then the jobs share one GPU by time-slicing (round robin: each of the n runnable
processes gets 1/n of the time, so each keeps the SMs busy u/n), recorded as the
fake NVML's per-process samples (1/6 s periods, integer %) and energy counter, and
split every 5 s (an exporter tick):

* **greenml**: idle learned from the first quiet window and kept apart, the rest by
  each process's summed SM utilization (:mod:`greenml.measure.gpu_share`);
* **equal**: the same idle set apart, the rest equally among the processes present
  (the exporter's former rule, given the same idle separation);
* **equal, idle included**: the former rule as it was (each present process an
  equal share of everything), compared with the exclusive run's *whole* energy.

Scenarios: pairs and triples of training jobs, and a training job beside a bursty
inference server (busy 2 s in 10) and an idle notebook that holds GPU memory but
runs no kernel. The error per process is |attributed − exclusive| / exclusive.

Usage::

    PYTHONPATH=src:. python benchmarks/gpu_share_attribution.py [--scenarios 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import random
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TRACE = REPO.parent / "shared" / "data" / "zeus_traces" / "summary_power_v100.csv"
IDLE_W = 30.0
LIMIT_W = 250.0
CAP_S = 900.0
TICK_S = 5.0
STEP_S = 0.5


@dataclass(frozen=True)
class Job:
    """A trace row run alone: SM activity u for T seconds at k W per unit of activity."""

    name: str
    k_w: float
    u: float
    t_s: float
    bursty: bool = False

    @property
    def dynamic_j(self) -> float:
        return self.k_w * self.u * self.t_s

    @property
    def exclusive_j(self) -> float:
        return (IDLE_W + self.k_w * self.u) * self.t_s


def load_jobs(path: Path = TRACE, spread: float = 0.2, seed: int = 0) -> list[Job]:
    """One job per (network, batch size) row at the 250 W limit (first optimizer listed)."""
    rows: dict[tuple[str, str], dict[str, str]] = {}
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if float(r["power_limit"]) == LIMIT_W:
                rows.setdefault((r["network"], r["batch_size"]), r)
    rng = random.Random(seed)
    factor = {net: 1.0 - spread * rng.random() for net in sorted({n for n, _ in rows})}
    jobs = []
    for (net, batch), r in sorted(rows.items()):
        k = (LIMIT_W - IDLE_W) * factor[net]
        u = min(1.0, (float(r["average_power"]) - IDLE_W) / k)
        jobs.append(Job(f"{net}/bs{batch}", k, u, min(CAP_S, float(r["time_per_epoch"]))))
    return jobs


def time_slice(jobs: list[Job], notebook: bool) -> tuple[dict[int, list[tuple[float, float]]],
                                                         float]:  # fmt: skip
    """Per pid (index + 1; the notebook last), the (start, sm_util) steps of the shared run,
    and its length. A bursty job is runnable 2 s in 10 while any training job runs."""
    left = {i: j.u * j.t_s for i, j in enumerate(jobs) if not j.bursty}
    steps: dict[int, list[tuple[float, float]]] = {i + 1: [] for i in range(len(jobs))}
    t, last = 0.0, -1.0
    current: dict[int, float] = {}
    while any(v > 1e-9 for v in left.values()):
        runnable = [i for i, j in enumerate(jobs)
                    if (left.get(i, 0) > 1e-9) or (j.bursty and (t % 10.0) < 2.0)]  # fmt: skip
        utils = {i + 1: (jobs[i].u / len(runnable) if i in runnable else 0.0)
                 for i in range(len(jobs))}  # fmt: skip
        if utils != current:
            for pid, u in utils.items():
                steps[pid].append((t, u))
            current = utils
        dt = STEP_S
        for i in runnable:
            if i in left:
                rate = jobs[i].u / len(runnable)
                dt = min(dt, left[i] / rate)
        for i in runnable:
            if i in left:
                left[i] = max(0.0, left[i] - jobs[i].u / len(runnable) * dt)
        t += dt
        last = t
    for pid in steps:
        steps[pid].append((last, 0.0))
    if notebook:
        steps[len(jobs) + 1] = [(0.0, 0.0)]
    return steps, last


def simulate(jobs: list[Job], notebook: bool = False) -> list[dict[str, float | str]]:
    """Exclusive vs attributed energy per process, by the three rules."""
    from tests.fakes.fake_nvml_shared import ProcPhase, SharedFakeNvml, SharedProcess, shared_gpu
    from tests.fakes.fake_pynvml import FakeClock, v100

    from greenml.measure.gpu_share import GpuShare

    quiet = 20.0  # the GPU idles before the jobs start: the idle power is learned there
    steps, length = time_slice(jobs, notebook)
    procs = []
    for pid, trace in steps.items():
        k = jobs[pid - 1].k_w if pid <= len(jobs) else 0.0
        phases = [ProcPhase(0.0, 0.0)] + [ProcPhase(quiet + s, u) for s, u in trace]
        procs.append(SharedProcess(pid, k, phases))
    clock = FakeClock(0.0)
    nvml = SharedFakeNvml([shared_gpu(v100("GPU-0"), IDLE_W, procs)], {0: procs}, clock=clock)
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    share = GpuShare(nvml, handle)
    ours: dict[int, float] = {}
    equal: dict[int, float] = {}
    old: dict[int, float] = {}
    done_at = {pid: quiet + max([b for (_, u), (b, _) in itertools.pairwise(trace)
                                 if u > 0], default=0.0) for pid, trace in steps.items()}
    last_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    while clock() < quiet + length + TICK_S:
        clock.advance(TICK_S)
        now_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        energy = (now_mj - last_mj) / 1000.0
        last_mj = now_mj
        present = [pid for pid in steps
                   if clock() - TICK_S < done_at[pid] or pid > len(jobs)
                   or jobs[pid - 1].bursty] if clock() > quiet else []  # fmt: skip
        split = share.split(energy, TICK_S, present)
        for pid, j in split.shares_j.items():
            ours[pid] = ours.get(pid, 0.0) + j
        idle = share.idle_power()[0] or 0.0
        active = max(0.0, energy - min(energy, idle * TICK_S))
        for pid in present:
            equal[pid] = equal.get(pid, 0.0) + active / len(present)
            old[pid] = old.get(pid, 0.0) + energy / len(present)
    out: list[dict[str, float | str]] = []
    for pid, trace in steps.items():
        if pid > len(jobs):
            out.append({"job": "notebook (idle)", "truth": 0.0, "ours": ours.get(pid, 0.0),
                        "equal": equal.get(pid, 0.0), "old": old.get(pid, 0.0),
                        "exclusive": 0.0})  # fmt: skip
            continue
        job = jobs[pid - 1]
        busy = sum((b - a) * u for (a, u), (b, _) in itertools.pairwise(trace))
        truth = job.k_w * busy  # == job.dynamic_j for a training job (same work)
        exclusive = truth + IDLE_W * (busy / job.u)
        out.append({"job": job.name, "truth": truth, "ours": ours.get(pid, 0.0),
                    "equal": equal.get(pid, 0.0), "old": old.get(pid, 0.0),
                    "exclusive": exclusive})  # fmt: skip
    return out


def scenarios(jobs: list[Job], count: int, seed: int) -> list[tuple[list[Job], bool]]:
    rng = random.Random(seed)
    out: list[tuple[list[Job], bool]] = []
    for n in range(count):
        kind = n % 3
        if kind == 2:
            train, serve = rng.sample(jobs, 2)
            burst = Job(serve.name + " (serving)", serve.k_w, serve.u, serve.t_s, bursty=True)
            out.append(([train, burst], True))
        else:
            out.append((rng.sample(jobs, 2 + kind), False))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--spread", type=float, default=0.2,
                        help="spread of the networks' power per unit of SM activity")
    args = parser.parse_args()
    if not TRACE.is_file():
        raise SystemExit(f"no Zeus trace at {TRACE}")
    jobs = load_jobs(spread=args.spread, seed=args.seed)
    errors: dict[str, list[float]] = {"ours": [], "equal": [], "old": []}
    absolute = {"ours": 0.0, "equal": 0.0, "old": 0.0}
    totals = {"truth": 0.0, "exclusive": 0.0}
    notebook_j: dict[str, float] = {"ours": 0.0, "equal": 0.0, "old": 0.0}
    for group, notebook in scenarios(jobs, args.scenarios, args.seed):
        for row in simulate(group, notebook):
            if row["job"] == "notebook (idle)":
                for key in notebook_j:
                    notebook_j[key] += float(row[key])
                continue
            truth, exclusive = float(row["truth"]), float(row["exclusive"])
            totals["truth"] += truth
            totals["exclusive"] += exclusive
            absolute["ours"] += abs(float(row["ours"]) - truth)
            absolute["equal"] += abs(float(row["equal"]) - truth)
            absolute["old"] += abs(float(row["old"]) - exclusive)
            errors["ours"].append(abs(float(row["ours"]) - truth) / truth)
            errors["equal"].append(abs(float(row["equal"]) - truth) / truth)
            errors["old"].append(abs(float(row["old"]) - exclusive) / exclusive)
    n = len(errors["ours"])
    print(f"{args.scenarios} time-sliced scenarios, {n} jobs from {TRACE.name} "
          f"(idle {IDLE_W:g} W, intensity spread {args.spread:.0%} assumed), split every "
          f"{TICK_S:g} s; error per job = |attributed − exclusive| ÷ exclusive")  # fmt: skip
    labels = {"ours": "greenml (SM activity, idle apart) vs exclusive dynamic energy",
              "equal": "equal split (idle apart)        vs exclusive dynamic energy",
              "old": "equal split of everything       vs exclusive total energy"}  # fmt: skip
    for key, label in labels.items():
        e = sorted(errors[key])
        weighted = absolute[key] / totals["exclusive" if key == "old" else "truth"]
        print(f"  {label}: energy-weighted {weighted:6.1%}  median {statistics.median(e):6.1%}  "
              f"p90 {e[int(0.9 * (len(e) - 1))]:6.1%}  max {e[-1]:6.1%}")  # fmt: skip
    print(f"  energy given to idle notebooks: greenml {notebook_j['ours'] / 1000:.1f} kJ, "
          f"equal {notebook_j['equal'] / 1000:.1f} kJ, equal of everything "
          f"{notebook_j['old'] / 1000:.1f} kJ (truth 0)")  # fmt: skip
    ratio = absolute["equal"] / max(absolute["ours"], 1e-12)
    print(f"  energy-weighted error, equal (idle apart) ÷ greenml: {ratio:.1f}×")


if __name__ == "__main__":
    main()
