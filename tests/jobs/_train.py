"""A stand-in for one node's training processes: per-rank ``step`` windows and progress.

Run by ``greenml run`` as ``python -m tests.jobs._train NODE_RANK RANKS_PER_NODE SLOW``:
each local rank publishes 6 ``step`` windows (0.10 s each, ``SLOW`` times that on the
node marked slow) drawing 300 W, then the job reports 6 of 6 steps done.
"""

from __future__ import annotations

import sys
import time

from greenml.measure import events


def main(node_rank: int, per_node: int, slow: float) -> None:
    t0 = time.time()
    for step in range(6):
        for local in range(per_node):
            duration = 0.1 * slow
            events.emit(
                "window", rank=node_rank * per_node + local, name="step",
                start_s=t0 + step, end_s=t0 + step + duration,
                components={"gpu": [300.0 * duration, "counter", 0.05]},
            )  # fmt: skip
    events.progress(6, 6)
    time.sleep(0.4)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
