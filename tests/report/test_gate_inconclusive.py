"""An increase within its uncertainty: INCONCLUSIVE (exit 3), never PASS, with the runs needed."""

from __future__ import annotations

import json
import random
from pathlib import Path

from greenml.report.gate import check
from tests.helpers import greenml_cli
from tests.run_records import record


def test_check_says_inconclusive_for_one_run_a_side(tmp_path: Path) -> None:
    # The case: +127.5 % with a CPU model's ±50 % on each side, one run a side.
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(json.dumps(record(1200.0, rel=0.5)))
    cand.write_text(json.dumps(record(2730.0, rel=0.5)))
    done = greenml_cli("check", "-b", str(base), "-c", str(cand))
    assert done.returncode == 3, done.stderr
    line = done.stdout.strip()
    assert line.startswith("greenml check: INCONCLUSIVE energy per run +127.5 % ± 160.9 %")
    assert "PASS" not in line
    assert line.endswith("above +5 % allowed only within its uncertainty: "
                         "about 6 runs a side would decide it")  # fmt: skip
    assert done.stderr == ""
    as_json = greenml_cli("check", "-b", str(base), "-c", str(cand), "--json")
    verdict = json.loads(as_json.stdout)
    assert as_json.returncode == 3
    assert verdict["outcome"] == "inconclusive" and verdict["passed"] is False
    assert verdict["runs_needed_per_side"] == 6


def test_the_runs_it_names_decide_it() -> None:
    # Two runs a side with a 28 % spread a run, +30 % against +5 %: inconclusive; the
    # count it names, drawn with that spread, decides it most of the time.
    rng = random.Random(7)

    def side(mean: float, n: int) -> list[dict[str, object]]:
        return [record(mean * (1 + 0.283 * rng.gauss(0, 1)), rel=0.01) for _ in range(n)]

    base = [record(80.0, rel=0.01), record(120.0, rel=0.01)]
    cand = [record(104.0, rel=0.01), record(156.0, rel=0.01)]
    first = check(base, cand, 0.05)
    assert first.outcome == "inconclusive" and first.runs_needed is not None
    n = first.runs_needed
    decided = sum(
        check(side(100.0, n), side(130.0, n), 0.05).outcome != "inconclusive" for _ in range(40)
    )
    assert decided >= 24  # ~80 % power by construction (the observed spread is itself noisy)


def test_different_setups_say_more_runs_cannot_decide() -> None:
    base = [record(100.0, rel=0.5)]
    cand = [record(120.0, rel=0.5, gpu_j=60.0)]
    verdict = check(base, cand, 0.05)
    assert verdict.outcome == "inconclusive" and verdict.runs_needed is None
    assert "more runs cannot decide it" in verdict.line()
