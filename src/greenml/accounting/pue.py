"""Power usage effectiveness: facility energy = IT energy × PUE, with cited defaults."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from greenml.errors import ConfigError


@dataclass(frozen=True)
class Pue:
    """A PUE value and where it comes from."""

    value: float
    source: str

    def facility_j(self, it_energy_j: float) -> float:
        """Energy drawn by the facility for ``it_energy_j`` of IT energy."""
        return it_energy_j * self.value


# Cloud Carbon Footprint's defaults (cloud-carbon-footprint/cloud-carbon-coefficients,
# methodology page "Power Usage Effectiveness"), the Uptime Institute's survey
# average for a data centre of unknown make, and 1.0 where no facility overhead
# applies (a personal machine measured at the device).
DEFAULT_PUE: dict[str, Pue] = {
    "gcp": Pue(1.10, "Google Cloud fleet average, as used by Cloud Carbon Footprint"),
    "aws": Pue(1.135, "AWS, as used by Cloud Carbon Footprint"),
    "azure": Pue(1.185, "Microsoft Azure, as used by Cloud Carbon Footprint"),
    "datacenter": Pue(1.58, "Uptime Institute Global Data Center Survey 2023 average"),
    "personal": Pue(1.0, "personal machine: no facility overhead"),
}
_ALIASES = {"google": "gcp", "gcp": "gcp", "amazon": "aws", "microsoft": "azure",
            "unknown": "datacenter", "dc": "datacenter", "laptop": "personal",
            "desktop": "personal", "local": "personal"}  # fmt: skip


def pue_for(value: float | None = None, provider: str | None = None) -> Pue:
    """The PUE to use: an explicit value, else the provider's default.

    Args:
        value: A user-given PUE (≥ 1.0).
        provider: ``gcp``, ``aws``, ``azure``, ``datacenter`` or ``personal``.

    Raises:
        ConfigError: Neither given, a PUE below 1, or an unknown provider.
    """
    if value is not None:
        if not 1.0 <= value < 5.0:
            raise ConfigError(f"PUE must be between 1.0 and 5.0, got {value}")
        return Pue(float(value), "given by the user")
    if provider is None:
        raise ConfigError("no PUE: give a value or a provider (" + ", ".join(DEFAULT_PUE) + ")")
    key = _ALIASES.get(provider.lower(), provider.lower())
    if key not in DEFAULT_PUE:
        close = difflib.get_close_matches(key, [*DEFAULT_PUE, *_ALIASES], n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"unknown provider {provider!r} for a default PUE{hint}")
    return DEFAULT_PUE[key]
