"""From findings to verified savings: plan (rank every advisor's changes), apply, verify.

- :func:`~greenml.savings.plan.plan_savings`: candidate changes over a project's runs,
  ranked by CO2eq saved per year, merged and combined without double counting;
- :mod:`~greenml.savings.apply`: an item as a policy in the config file (greenml does it)
  or as files for review (SkyPilot, KEDA, Karpenter, Slurm);
- :func:`~greenml.savings.policy.policy_block`: what a run records of the policy in force;
- :func:`~greenml.savings.verify.verify_all`: before against after by the CI gate's rule,
  a verified saving written to the ledger.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenml.lazy import lazy_exports

if TYPE_CHECKING:
    from greenml.savings.apply import apply_item, undo_item
    from greenml.savings.candidate import Candidate
    from greenml.savings.plan import SavingsPlan, plan_savings
    from greenml.savings.policy import load_policy, policy_block
    from greenml.savings.verify import verify_all

_LAZY = {
    "apply_item": "greenml.savings.apply", "undo_item": "greenml.savings.apply",
    "Candidate": "greenml.savings.candidate",
    "SavingsPlan": "greenml.savings.plan", "plan_savings": "greenml.savings.plan",
    "load_policy": "greenml.savings.policy", "policy_block": "greenml.savings.policy",
    "verify_all": "greenml.savings.verify",
}  # fmt: skip

__all__ = [
    "Candidate",
    "SavingsPlan",
    "apply_item",
    "load_policy",
    "plan_savings",
    "policy_block",
    "undo_item",
    "verify_all",
]

__getattr__ = lazy_exports(__name__, _LAZY)
