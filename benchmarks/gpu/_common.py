"""Shared by the GPU validation parts: arguments, the GPU check, NVML, versions, output.

Each part is a script run by ``run_all.py`` in its own process. It writes its figures
as ``NAME.json`` into ``--out`` and prints them, plus a Markdown table ready to paste
into docs/validation.md. ``--cpu-smoke`` runs a shortened version on the CPU against
a fake NVML (the ``GREENML_FAKE_NVML`` hook, default ``tests.benchmarks.fake_gpu:nvml``)
so that CI keeps the scripts working; its figures mean nothing about any GPU.
Without a GPU and without ``--cpu-smoke`` a part says so and exits 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import signal
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FAKE_NVML_ENV = "GREENML_FAKE_NVML"
DEFAULT_FAKE_NVML = "tests.benchmarks.fake_gpu:nvml"


class Part:
    """One validation part: its arguments, deadline, NVML module and result file."""

    def __init__(self, name: str, description: str, budget_s: float) -> None:
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument("--out", type=Path, help="Directory for NAME.json.")
        parser.add_argument("--budget", type=float, default=budget_s, help="Seconds allowed.")
        parser.add_argument(
            "--cpu-smoke", action="store_true", help="Short run on the CPU with a fake NVML."
        )
        self.parser = parser
        self.name = name
        self.started = time.monotonic()
        self.args: argparse.Namespace = argparse.Namespace()
        self.smoke = False
        self.deadline = math.inf
        self.figures: dict[str, Any] = {}
        self.tables: list[str] = []
        self._nvml: Any = None

    def parse(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        self.args = self.parser.parse_args(argv)
        self.smoke = bool(self.args.cpu_smoke)
        self.deadline = self.started + float(self.args.budget)
        return self.args

    def left_s(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def device(self) -> str:
        return "cpu" if self.smoke else "cuda"

    def require_gpu(self) -> None:
        """Exit 0 with a clear line when there is no GPU and no ``--cpu-smoke``."""
        if self.smoke:
            os.environ.setdefault(FAKE_NVML_ENV, DEFAULT_FAKE_NVML)
            if str(REPO) not in sys.path:
                sys.path.insert(0, str(REPO))
            print(f"[{self.name}] CPU smoke mode: fake NVML, figures say nothing about a GPU")
            return
        import torch

        if not torch.cuda.is_available():
            print(f"[{self.name}] no GPU visible to torch {torch.__version__}: part skipped")
            self.finish("skipped", reason="no GPU (run with --cpu-smoke to exercise the script)")
            sys.exit(0)

    def nvml(self) -> Any:
        """The real ``pynvml`` module, or in smoke mode the fake the hook names (once)."""
        if self._nvml is None:
            hook = os.environ.get(FAKE_NVML_ENV) if self.smoke else None
            if hook:
                module, _, factory = hook.partition(":")
                self._nvml = getattr(importlib.import_module(module), factory or "nvml")()
            else:
                import pynvml

                self._nvml = pynvml
        return self._nvml

    def environment(self) -> dict[str, Any]:
        """GPU, driver, CUDA, torch, transformers and greenml versions."""
        from greenml import __version__
        from greenml.measure.sensors.nvml import nvml_environment

        env: dict[str, Any] = {
            "python": platform.python_version(),
            "greenml": __version__,
            "smoke": self.smoke,
        }
        env.update(nvml_environment(self.nvml()))
        try:
            import torch

            env["torch"] = torch.__version__
            env["torch_cuda"] = torch.version.cuda
            if torch.cuda.is_available():
                env["torch_gpu"] = torch.cuda.get_device_name(0)
        except ImportError:
            env["torch"] = None
        return env

    def table(self, title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
        """A Markdown table, kept for the result file and printed."""
        lines = [f"**{title}**", "", "| " + " | ".join(headers) + " |"]
        lines.append("|" + "|".join("---" for _ in headers) + "|")
        for row in rows:
            lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
        text = "\n".join(lines) + "\n"
        self.tables.append(text)
        print(text)
        return text

    def exit_on_sigterm(self) -> None:
        """SIGTERM (run_all's timeout) raises SystemExit: ``finally`` blocks still run."""

        def stop(signum: int, frame: Any) -> None:
            raise SystemExit(f"[{self.name}] stopped by SIGTERM")

        signal.signal(signal.SIGTERM, stop)

    def checkpoint(self) -> None:
        """Write what is measured so far, so that a part stopped later keeps it."""
        self.finish("partial", quiet=True)

    def finish(self, status: str = "ok", quiet: bool = False, **extra: Any) -> None:
        """Write ``NAME.json`` (figures, tables, status) into ``--out``."""
        data = {
            "part": self.name,
            "status": status,
            "smoke": self.smoke,
            "wall_s": round(time.monotonic() - self.started, 2),
            "figures": self.figures,
            "markdown": self.tables,
            **extra,
        }
        out = getattr(self.args, "out", None)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{self.name}.json").write_text(json.dumps(clean(data), indent=2) + "\n")
        if not quiet:
            print(f"[{self.name}] {status} in {data['wall_s']} s")


def fmt(value: Any) -> str:
    """A table cell: floats to 4 significant digits, None as a dash."""
    if value is None:
        return "–"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "–"
        return f"{value:.4g}"
    return str(value).replace("|", "\\|")


def pct(value: float | None) -> str:
    """A relative figure as a signed percentage (``+0.12 %``)."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value * 100:+.3f} %"


def clean(value: Any) -> Any:
    """JSON-safe: non-finite floats become None, tuples lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def summary(values: Sequence[float]) -> dict[str, float | int | None]:
    """n, mean, mean of absolutes, largest absolute value."""
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return {"n": 0, "mean": None, "mean_abs": None, "max_abs": None}
    return {
        "n": len(vals),
        "mean": sum(vals) / len(vals),
        "mean_abs": sum(abs(v) for v in vals) / len(vals),
        "max_abs": max(abs(v) for v in vals),
    }


def median(values: Sequence[float]) -> float:
    vals = sorted(values)
    if not vals:
        return math.nan
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def counter_j(nvml: Any, handle: Any) -> float:
    """The raw NVML energy counter in joules."""
    return float(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)) / 1000.0


def first_handle(nvml: Any) -> Any:
    """The handle of the GPU torch calls ``cuda:0`` (NVML initialized)."""
    from greenml.measure.sensors.nvml import visible_handles

    nvml.nvmlInit()
    return visible_handles(nvml)[0]
