"""What a RequestMeter reports: settled requests, energy per route, the serving report."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from greenml.quantities import J_PER_KWH as JOULES_PER_KWH

ATTRIBUTION = "time-overlap share of sampled power"


@dataclass(frozen=True, slots=True)
class SettledRequest:
    """One request whose energy is known (what listeners receive)."""

    route: str
    start_s: float  # Unix time
    duration_s: float
    energy_j: float
    uncertainty_rel: float


@dataclass(frozen=True)
class RouteEnergy:
    """Energy of the settled requests of one route."""

    route: str
    requests: int
    energy_j: float
    duration_s: float
    uncertainty_j: float

    @property
    def j_per_request(self) -> float:
        return self.energy_j / self.requests if self.requests else 0.0

    @property
    def wh_per_1000_requests(self) -> float:
        return self.j_per_request * 1000.0 / 3600.0

    @property
    def uncertainty_rel(self) -> float:
        return self.uncertainty_j / self.energy_j if self.energy_j > 0 else 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "route": self.route,
            "requests": self.requests,
            "energy_j": self.energy_j,
            "j_per_request": self.j_per_request,
            "wh_per_1000_requests": self.wh_per_1000_requests,
            "uncertainty_rel": self.uncertainty_rel,
            "mean_duration_s": self.duration_s / self.requests if self.requests else 0.0,
        }


@dataclass(frozen=True)
class ServingReport:
    """Energy per route, and the idle energy no request was charged."""

    routes: tuple[RouteEnergy, ...]
    idle_energy_j: float
    busy_energy_j: float
    unsettled: int  # finished, waiting for a power sample after their end
    in_flight: int
    method: str
    devices: tuple[str, ...]
    attribution: str = ATTRIBUTION

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.routes)

    @property
    def energy_j(self) -> float:
        return sum(r.energy_j for r in self.routes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "routes": [r.to_dict() for r in self.routes],
            "requests": self.requests,
            "energy_j": self.energy_j,
            "energy_kwh": self.energy_j / JOULES_PER_KWH,
            "idle_energy_j": self.idle_energy_j,
            "busy_energy_j": self.busy_energy_j,
            "unsettled": self.unsettled,
            "in_flight": self.in_flight,
            "method": self.method,
            "attribution": self.attribution,
            "devices": list(self.devices),
        }
