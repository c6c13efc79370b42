"""One model call as greenml accounts it: energy (measured or estimated), CO2eq and water."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from greenml.llm.remote.energy_model import estimate
from greenml.llm.remote.place import Place, place_for
from greenml.llm.remote.usage import ProxyEnergy

Kind = Literal["measured", "estimated"]


@dataclass(frozen=True)
class LlmCall:
    """A model call's figures, each with its method and source.

    ``kind`` is ``measured`` when a greenml proxy measured the request (read back
    from ``usage.energy``; ``sensor_method`` says how the proxy measured it) and
    ``estimated`` otherwise (``basis`` states the model). Energy is facility energy.
    """

    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    tokens_source: str
    kind: Kind
    energy_j: float
    uncertainty_j: float
    basis: str
    sensor_method: str | None
    co2eq_g: float | None
    co2eq_uncertainty_g: float | None
    intensity_source: str
    water_ml: float | None
    water_source: str
    started_at: str
    duration_s: float
    stream: bool
    trace_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def account(
    *,
    provider: str,
    model: str,
    input_tokens: int,
    output_tokens: int,
    tokens_source: str = "usage",
    energy: ProxyEnergy | None = None,
    place: Place | None = None,
    started_s: float | None = None,
    duration_s: float = 0.0,
    stream: bool = False,
    trace_id: str | None = None,
) -> LlmCall:
    """Account one call: the proxy's measurement when given, else the size-based estimate."""
    where = place if place is not None else place_for(provider)
    if energy is not None:
        kind: Kind = "measured"
        energy_j, unc_j = energy.energy_j, energy.uncertainty_j
        basis = f"measured by a greenml proxy ({energy.method})"
        sensor: str | None = energy.method
    else:
        est = estimate(model, input_tokens, output_tokens)
        kind, energy_j, unc_j, basis, sensor = (
            "estimated",
            est.energy_j,
            est.uncertainty_j,
            est.basis,
            None,
        )
    co2: float | None
    co2_unc: float | None
    if energy is not None and energy.co2eq_g is not None:
        co2 = energy.co2eq_g
        co2_unc = co2 * unc_j / energy_j if energy_j > 0 else 0.0
        source = "the proxy's figure (its node's grid intensity)"
    else:
        co2, co2_unc, source = where.carbon_g(energy_j, unc_j)
    water_ml, water_source = where.water_ml(energy_j)
    start = time.time() - duration_s if started_s is None else started_s
    return LlmCall(
        provider=provider,
        model=model,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        tokens_source=tokens_source,
        kind=kind,
        energy_j=energy_j,
        uncertainty_j=unc_j,
        basis=basis,
        sensor_method=sensor,
        co2eq_g=co2,
        co2eq_uncertainty_g=co2_unc,
        intensity_source=source,
        water_ml=water_ml,
        water_source=water_source,
        started_at=datetime.fromtimestamp(start, tz=timezone.utc).isoformat(),
        duration_s=duration_s,
        stream=stream,
        trace_id=trace_id,
    )
