"""Advisors for decisions the green-computing guides ask for, with numbers.

- :mod:`~greenml.advise.hardware`: which GPU or cloud instance for a workload;
- :mod:`~greenml.advise.tco`: buy on-premises hardware or rent cloud capacity;
- :mod:`~greenml.advise.audit`: the green-practice checklist against the store;
- :mod:`~greenml.advise.federated`: federated learning or centralizing the data.

Each uses greenml's measurements where they exist and states every assumption
where they do not.
"""

from __future__ import annotations

from greenml.advise.candidates import Candidate, candidates
from greenml.advise.hardware import HardwareAdvice, advise_hardware
from greenml.advise.workload import Workload, workload_from_flops, workload_from_run

__all__ = [
    "Candidate",
    "HardwareAdvice",
    "Workload",
    "advise_hardware",
    "candidates",
    "workload_from_flops",
    "workload_from_run",
]
