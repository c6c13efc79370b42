"""Distributed jobs: one job from many nodes' runs (Slurm, torchrun, Kubernetes, Ray).

- :mod:`greenml.jobs.summary`: a job's runs added up (energy ± uncertainty, carbon and
  cost per node, nodes missing, conflicts, elastic size changes);
- :mod:`greenml.jobs.sacct`: Slurm's own energy accounting as a second, labelled source.

The identity of a run's job is captured by ``greenml run`` (:mod:`greenml.run.job_identity`)
and looked up in the store by :mod:`greenml.store.jobs`.
"""

from __future__ import annotations

__all__: list[str] = []
