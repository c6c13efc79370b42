"""Kepler's per-pod CPU and DRAM energy, read from Prometheus, as a labelled second source.

Kepler (CNCF) attributes each node's RAPL energy to containers and exports it
to Prometheus. greenml does not rebuild that: for a run that ran in a pod (its
``job`` block names ``pod`` and ``namespace``), :func:`pod_energy` asks
Prometheus's HTTP query API for the increase of Kepler's container counters
over the run's time span:

``sum(increase(kepler_container_package_joules_total{container_namespace=NS,pod_name=POD}[Ds]))``

(and ``kepler_container_dram_joules_total``), evaluated at the run's end.
``increase`` extrapolates at the window's edges, so the figure is labelled as
Kepler's, beside greenml's, never merged into it.

Lazy imports: httpx, when Prometheus is asked.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from greenml.errors import MetricsSourceError

if TYPE_CHECKING:
    from greenml.jobs.summary import JobSummary

SOURCE = "kepler via Prometheus"
METRICS = {
    "cpu_package_j": "kepler_container_package_joules_total",
    "dram_j": "kepler_container_dram_joules_total",
}


def _quoted(value: str) -> str:
    """A PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def pod_query(metric: str, namespace: str, pod: str, window_s: float) -> str:
    """The PromQL for the increase of ``metric`` over a pod's containers in the last window."""
    labels = f"container_namespace={_quoted(namespace)},pod_name={_quoted(pod)}"
    return f"sum(increase({metric}{{{labels}}}[{max(1, math.ceil(window_s))}s]))"


def query_value(base_url: str, query: str, at_s: float, *, timeout_s: float = 10.0) -> float | None:
    """One instant query's scalar (``None``: no series matched).

    Raises:
        MetricsSourceError: Prometheus unreachable, an error status, or an answer not understood.
    """
    import httpx

    from greenml.store.url import mask_url

    url = base_url.rstrip("/") + "/api/v1/query"
    shown = mask_url(base_url)
    try:
        answer = httpx.get(url, params={"query": query, "time": f"{at_s:.3f}"}, timeout=timeout_s)
        data = answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise MetricsSourceError(f"Prometheus {shown}: query failed: {exc}") from None
    if answer.status_code != 200 or not isinstance(data, dict) or data.get("status") != "success":
        why = data.get("error") if isinstance(data, dict) else None
        raise MetricsSourceError(
            f"Prometheus {shown}: query failed (HTTP {answer.status_code}): {why or 'no answer'}"
        )
    try:
        result = data["data"]["result"]
        if not result:
            return None
        value = float(result[0]["value"][1])
    except (KeyError, IndexError, TypeError, ValueError):
        raise MetricsSourceError(f"Prometheus {shown}: an answer not understood") from None
    return value if math.isfinite(value) and value >= 0 else None


def pod_energy(
    base_url: str, namespace: str, pod: str, start_s: float, end_s: float
) -> dict[str, float | None]:
    """Kepler's CPU package and DRAM joules of a pod between two times (``None``: no data).

    Raises:
        MetricsSourceError: Prometheus could not be asked.
    """
    window = max(1.0, end_s - start_s)
    return {key: query_value(base_url, pod_query(metric, namespace, pod, window), end_s)
            for key, metric in METRICS.items()}  # fmt: skip


def compare_kepler(summary: JobSummary, base_url: str) -> dict[str, Any]:
    """Kepler's CPU and DRAM energy of each counted node's pod, beside greenml's figure.

    Raises:
        MetricsSourceError: Prometheus could not be asked.
    """
    nodes = []
    for node in summary.nodes:
        if not node.counted or not node.pod or not node.namespace:
            continue
        start = datetime.fromisoformat(node.started_at).timestamp()
        end = datetime.fromisoformat(node.ended_at).timestamp() if node.ended_at else start
        energy = pod_energy(base_url, node.namespace, node.pod, start, end)
        greenml_cpu = sum(d["energy_j"] for d in node.devices.values()
                          if d["component"] in ("cpu", "dram"))  # fmt: skip
        nodes.append({"run_id": node.run_id, "node": node.node, "namespace": node.namespace,
                      "pod": node.pod, **energy, "greenml_cpu_dram_j": greenml_cpu})  # fmt: skip
    known = [v for n in nodes for v in (n["cpu_package_j"], n["dram_j"]) if v is not None]
    total = sum(known) if known else None
    if not nodes:
        text = "unavailable: no node run of the job recorded its pod (POD_NAME, POD_NAMESPACE)"
    elif total is None:
        text = "unavailable: Prometheus has no Kepler series for the job's pods"
    else:
        text = (f"{total / 1000:.4g} kJ CPU package + DRAM over {len(nodes)} pod(s) "
                "(Kepler's attribution; GPUs are not in it)")  # fmt: skip
    return {"source": SOURCE, "status": "ok" if total is not None else "unavailable",
            "energy_j": total, "nodes": nodes, "text": text}  # fmt: skip
