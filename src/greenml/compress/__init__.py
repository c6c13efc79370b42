"""Compression measured in joules: quantize, prune, distil, export, and measure each variant.

::

    from greenml.compress import compress
    result = compress(model, evaluate, example_inputs, max_accuracy_drop=1.0)
    print(result.recommendation.reason)

``evaluate(predict)`` returns an accuracy in percent; ``predict`` is called like
the model. Each variant is measured with a :class:`greenml.Meter`: accuracy,
latency p50/p99, throughput, energy per 1,000 inferences (with its method and
uncertainty) and size. torch is imported when ``compress`` runs, not here.
"""

from __future__ import annotations

from greenml.compress.api import DEFAULT_TECHNIQUES, compress, resolve_techniques
from greenml.compress.options import CompressOptions
from greenml.compress.pareto import Recommendation, pareto_front, recommend
from greenml.compress.result import CompressionResult
from greenml.compress.techniques import TECHNIQUES
from greenml.compress.variants import Variant

__all__ = [
    "DEFAULT_TECHNIQUES",
    "TECHNIQUES",
    "CompressOptions",
    "CompressionResult",
    "Recommendation",
    "Variant",
    "compress",
    "pareto_front",
    "recommend",
    "resolve_techniques",
]
