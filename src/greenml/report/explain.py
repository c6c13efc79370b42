"""What changed between two sides of a gate: the environment blocks diffed, culprits first.

``greenml check --explain`` prints this beside the verdict. Each side is one run
or several; a side's value of an entry is the set of values its runs recorded
(``a | b`` when its runs disagree). An entry changed when the two sets differ.

Entries, most likely culprits first: ML frameworks (torch, jax, …), other
packages, the GPU driver and CUDA, the GPUs and their power limits, the CPU
and host, the interpreter and OS, the git commit and dirty state, and
greenml's own settings (its version, what it measured and how, where the
carbon intensity came from). A diff names candidates; it does not prove which
one caused the change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from greenml.record.run_record import RunRecord

FRAMEWORKS = frozenset({
    "torch", "torchvision", "tensorflow", "jax", "jaxlib", "keras", "transformers",
    "lightning", "pytorch-lightning", "accelerate", "deepspeed", "vllm", "onnxruntime",
    "onnxruntime-gpu", "triton", "xformers", "flash-attn", "scikit-learn", "xgboost",
    "lightgbm", "numpy", "nvidia-cudnn-cu12", "nvidia-cublas-cu12", "nvidia-nccl-cu12",
})  # fmt: skip
"""Packages reported as ``framework`` (the ones whose version moves energy most often)."""

KINDS = ("framework", "package", "driver", "cuda", "gpu", "cpu", "host", "python", "os", "git",
         "greenml")  # fmt: skip
"""Kinds of entry, in the order they are listed (most likely culprit first)."""

ABSENT = "absent"


@dataclass(frozen=True)
class EnvChange:
    """One entry whose value differs between the sides."""

    kind: str
    what: str
    before: str
    after: str

    def line(self) -> str:
        """``package numpy: 1.26.4 → 2.0.0``."""
        return f"{self.kind} {self.what}: {self.before} → {self.after}"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "what": self.what, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Explanation:
    """The changes between the sides, and what could not be compared."""

    changes: tuple[EnvChange, ...]
    notes: tuple[str, ...]

    def lines(self) -> list[str]:
        """The text printed under the verdict."""
        if self.changes:
            out = [f"What changed (baseline → candidate), {len(self.changes)} difference(s):"]
            out += [f"  {c.line()}" for c in self.changes]
        else:
            out = ["Nothing differs in the environment blocks (packages, driver, CUDA, "
                   "hardware, git, greenml's settings): look at the workload and its data."]
        return out + [f"  note: {n}" for n in self.notes]

    def to_dict(self) -> dict[str, Any]:
        return {"changes": [c.to_dict() for c in self.changes], "notes": list(self.notes)}


def explain(baseline: Sequence[RunRecord], candidate: Sequence[RunRecord]) -> Explanation:
    """Diff the environment blocks (and greenml's settings) of the two sides."""
    notes = [f"{name}: {len(missing)} run(s) without a captured environment ({', '.join(missing)})"
             for name, side in (("baseline", baseline), ("candidate", candidate))
             if (missing := [r.id[:8] for r in side if not r.environment.to_dict()])]  # fmt: skip
    before, after = _side(baseline), _side(candidate)
    changes = [
        EnvChange(kind, what, _shown(before.get((kind, what))), _shown(after.get((kind, what))))
        for kind, what in before.keys() | after.keys()
        if before.get((kind, what), {ABSENT}) != after.get((kind, what), {ABSENT})
    ]
    changes.sort(key=lambda c: (KINDS.index(c.kind), c.what))
    return Explanation(tuple(changes), tuple(notes))


def _side(records: Sequence[RunRecord]) -> dict[tuple[str, str], set[str]]:
    values: dict[tuple[str, str], set[str]] = {}
    for record in records:
        for key, value in entries(record).items():
            values.setdefault(key, set()).add(value)
    for key, seen in values.items():  # a run without the entry counts as "absent"
        if sum(key in entries(r) for r in records) < len(records):
            seen.add(ABSENT)
    return values


def _shown(values: set[str] | None) -> str:
    if not values:
        return ABSENT
    return " | ".join(sorted(values)) + (" (the side's runs differ)" if len(values) > 1 else "")


def entries(record: RunRecord) -> dict[tuple[str, str], str]:
    """One run's comparable entries: ``(kind, what) → value``."""
    env = record.environment
    out: dict[tuple[str, str], str] = {}

    def put(kind: str, what: str, value: object) -> None:
        if value is not None and value != "":
            out[(kind, what)] = str(value)

    if env.packages is not None:
        for name, version in (env.packages.distributions or {}).items():
            put("framework" if name in FRAMEWORKS else "package", name, version)
        if not env.packages.distributions:
            put("package", "list (sha256)", (env.packages.sha256 or "")[:12])
    if env.gpu is not None:
        put("driver", "NVIDIA driver", env.gpu.driver_version)
        put("cuda", "CUDA driver API", env.gpu.cuda_driver_version)
        for gpu in env.gpu.gpus or []:
            put("gpu", f"GPU {gpu.index} model", gpu.name)
            put("gpu", f"GPU {gpu.index} power limit (W)", gpu.power_limit_w)
    if env.cpu is not None:
        put("cpu", "model", env.cpu.model)
        put("cpu", "logical cores", env.cpu.logical_cores)
    put("host", "hostname", env.hostname)
    if env.python is not None:
        put("python", "version", env.python.version)
        put("python", "implementation", env.python.implementation)
    if env.os is not None:
        put("os", "release", env.os.release)
    if env.git is not None:
        put("git", "commit", (env.git.commit or "")[:12])
        put("git", "dirty", env.git.dirty)
    put("greenml", "version", env.greenml_version)
    for key, device in sorted((record.measured_devices or {}).items()):
        put("greenml", f"measured {key}", f"{device.name} ({device.method})")
    if record.carbon is not None:
        put("greenml", "intensity source", record.carbon.source)
        put("greenml", "PUE", record.carbon.pue)
    return out
