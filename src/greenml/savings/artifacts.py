"""Files for changes outside greenml, written for review (never applied by greenml).

- ``skypilot``: a SkyPilot task with ``autostop`` (the cluster stops when idle), on spot
  with a recovery strategy for spot capacity (:func:`greenml.schedule.emit.skypilot_task`);
- ``keda-scaledobject``: a KEDA ``ScaledObject`` that scales an idle inference deployment
  to zero replicas (``minReplicaCount: 0``) on its request rate;
- ``karpenter-nodepool``: a Karpenter ``NodePool`` that provisions spot capacity first
  (``karpenter.sh/capacity-type In [spot, on-demand]``);
- ``slurm``: an ``sbatch`` line with ``--begin`` at the zone's greenest hour within the
  deadline (:mod:`greenml.schedule.profile`), written in the cluster's zone.

The tests validate each against its schema: SkyPilot's task schema, and the
``openAPIV3Schema`` of the KEDA and Karpenter CRDs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

AUTOSTOP_IDLE_MINUTES = 10


def skypilot(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A SkyPilot task with autostop (spot and job recovery when ``settings['spot']``)."""
    from greenml.schedule.emit import Placement, skypilot_task

    place = [Placement.parse(settings["infra"])] if settings.get("infra") else []
    task = skypilot_task(
        name=name, run=str(settings.get("run") or "greenml run -- python train.py"),
        placements=place, use_spot=bool(settings.get("spot")),
    )  # fmt: skip
    task["resources"]["autostop"] = {"idle_minutes": AUTOSTOP_IDLE_MINUTES, "down": True}
    return task


def keda_scaledobject(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A KEDA ScaledObject: the deployment scales to zero when no request comes."""
    target = str(settings.get("deployment") or name)
    query = str(settings.get("query") or
                f'sum(rate(http_requests_total{{deployment="{target}"}}[2m]))')  # fmt: skip
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": f"{target}-scale-to-zero", "labels": {"greenml/item": name}},
        "spec": {
            "scaleTargetRef": {"name": target},
            "minReplicaCount": 0,
            "maxReplicaCount": int(settings.get("max_replicas") or 4),
            "cooldownPeriod": 300,
            "triggers": [{
                "type": "prometheus",
                "metadata": {
                    "serverAddress": str(settings.get("prometheus") or
                                         "http://prometheus.monitoring:9090"),
                    "query": query,
                    "threshold": "1",
                    "activationThreshold": "0",
                },
            }],
        },
    }  # fmt: skip


def karpenter_nodepool(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A Karpenter NodePool that takes spot capacity first, on-demand when none is left."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": f"{name}-spot", "labels": {"greenml/item": name}},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                     "name": str(settings.get("node_class") or "default")},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In",
                         "values": ["spot", "on-demand"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                           "consolidateAfter": "5m"},
        },
    }  # fmt: skip


def green_begin(zone: str, now: datetime, deadline_s: float, duration_s: float) -> datetime:
    """The start within the deadline whose hours are greenest on the zone's typical day."""
    import numpy as np

    from greenml.schedule.profile import profile_values

    first = now.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    steps = max(1, int(np.ceil(duration_s / 3600.0)))
    starts = [first + timedelta(hours=h)
              for h in range(int(max(deadline_s - duration_s, 0.0) // 3600.0) + 1)]  # fmt: skip
    means = [float(np.mean(profile_values(zone, s.timestamp() + np.arange(steps) * 3600.0)))
             for s in starts]  # fmt: skip
    return starts[int(np.argmin(means))]


def slurm_line(
    name: str, settings: Mapping[str, Any], now: datetime | None = None,
    cluster_tz: str = "UTC", duration_s: float = 3600.0,
) -> str:  # fmt: skip
    """``sbatch --begin=… --deadline=… JOB`` at the zone's greenest start in reach."""
    from greenml.schedule.emit import ClusterZone
    from greenml.schedule.timeparse import parse_duration_s

    now = now or datetime.now(timezone.utc)
    deadline_s = parse_duration_s(str(settings.get("deadline") or "+12h").lstrip("+"), "deadline")
    begin = green_begin(str(settings["location"]), now, deadline_s, duration_s)
    zone = ClusterZone.named(cluster_tz)
    end = now + timedelta(seconds=deadline_s)
    return (
        f"# greenml savings {name}: the greenest start of {settings['location']}'s typical day "
        f"within {settings.get('deadline') or '+12h'} ({begin:%Y-%m-%dT%H:%M}Z); times in "
        f"{zone.label}\n"
        f"sbatch --job-name={name} --begin={zone.at(begin):%Y-%m-%dT%H:%M:%S} "
        f"--deadline={zone.at(end):%Y-%m-%dT%H:%M:%S} job.sbatch\n"
    )


ARTIFACTS = {
    "idle-gpu": ("keda-scaledobject",),
    "spot": ("karpenter-nodepool", "skypilot"),
    "green-hours": ("slurm",),
    "region": ("skypilot",),
}
"""Decision kind (the key before ``:``) → the artifacts written for it."""
