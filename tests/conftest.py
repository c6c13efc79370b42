"""Suite-wide settings: Hypothesis without time limits.

Speed is measured in benchmarks/, never in unit tests: on a shared 2-core machine a
property test's example may take longer than Hypothesis's 200 ms deadline, or its input
generation may look slow, without anything being wrong with greenml.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile(
    "greenml", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("greenml")
