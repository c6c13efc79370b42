"""Power-limit and clock control in dry-run only: plans on the real GPU, nothing set.

Runs the read-only ``greenml gpu limits`` and ``greenml gpu clocks``, then
``greenml gpu set-limit W --dry-run`` (W: 100 W under the current limit, within the
GPU's range) and ``greenml gpu lock-clocks MHZ --dry-run`` (about 70 % of the highest
supported clock), and checks with NVML that the power limit and the SM clock
limits are the same afterwards as before. Nothing on the device is changed: the
commands run with ``--dry-run`` only, by design and by this check.

    python benchmarks/gpu/controls_dry_run.py --out DIR [--cpu-smoke]
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from _common import REPO, Part, first_handle


def greenml(*args: str) -> tuple[int, Any, str]:
    """Run the greenml CLI; (exit code, parsed JSON or None, stderr tail)."""
    proc = subprocess.run(
        [sys.executable, "-m", "greenml", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        data = proc.stdout[-500:]
    return proc.returncode, data, proc.stderr.strip()[-500:]


def plan(data: Any) -> str:
    """A table cell: the planned changes, or what a read-only command reported."""
    if isinstance(data, dict):
        data = data.get("changes", data.get("gpus", data))
    return json.dumps(data)[:160].replace("|", "/")


def settings(nvml: Any, handle: Any) -> dict[str, Any]:
    """What a control could change, read from NVML."""
    out: dict[str, Any] = {"power_limit_mw": nvml.nvmlDeviceGetPowerManagementLimit(handle)}
    sm = nvml.NVML_CLOCK_SM
    for name, fn in (
        ("max_sm_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, sm)),
        ("app_sm_clock_mhz", lambda: nvml.nvmlDeviceGetApplicationsClock(handle, sm)),
    ):
        try:
            out[name] = fn()
        except Exception as exc:
            out[name] = f"unavailable: {type(exc).__name__}"
    return out


def main() -> None:
    part = Part("controls_dry_run", __doc__.splitlines()[0], budget_s=20)
    part.parse()
    part.require_gpu()
    nvml = part.nvml()
    handle = first_handle(nvml)
    before = settings(nvml, handle)
    low_mw, high_mw = nvml.nvmlDeviceGetPowerManagementLimitConstraints(handle)
    target_w = max(low_mw / 1000.0, before["power_limit_mw"] / 1000.0 - 100.0)
    runs: dict[str, Any] = {}
    rc, limits, err = greenml("gpu", "limits", "--gpus", "0", "--json")
    runs["limits"] = {"exit": rc, "json": limits, "stderr": err}
    rc, clocks, err = greenml("gpu", "clocks", "--gpus", "0", "--json")
    runs["clocks"] = {"exit": rc, "json": clocks, "stderr": err}
    rc, data, err = greenml(
        "gpu", "set-limit", f"{target_w:g}", "--gpus", "0", "--dry-run", "--json"
    )
    runs["set-limit --dry-run"] = {"exit": rc, "json": data, "stderr": err}
    mhz = 1000.0
    if isinstance(before.get("max_sm_clock_mhz"), int):
        mhz = round(0.7 * before["max_sm_clock_mhz"])
    rc, data, err = greenml("gpu", "lock-clocks", f"{mhz:g}", "--gpus", "0", "--dry-run", "--json")
    runs["lock-clocks --dry-run"] = {"exit": rc, "json": data, "stderr": err}
    after = settings(nvml, handle)
    unchanged = before == after
    part.figures.update(
        before=before,
        after=after,
        unchanged=unchanged,
        runs=runs,
        power_limit_range_w=[low_mw / 1000.0, high_mw / 1000.0],
    )
    part.table(
        "Controls in dry-run (nothing set)",
        ["command", "exit", "plan"],
        [
            [
                name,
                r["exit"],
                json.dumps(r["json"].get("changes") if isinstance(r["json"], dict) else r["json"])[
                    :120
                ],
            ]
            for name, r in runs.items()
        ],
    )
    part.table(
        "Device settings before and after",
        ["setting", "before", "after"],
        [[k, before[k], after.get(k)] for k in before],
    )
    ok = unchanged and all(r["exit"] == 0 for r in runs.values())
    if not unchanged:
        print("DEVICE SETTINGS CHANGED:", before, "->", after)
    part.finish("ok" if ok else "failed")


if __name__ == "__main__":
    main()
