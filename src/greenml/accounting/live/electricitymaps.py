"""Electricity Maps API v3: hourly average carbon intensity of a zone.

Endpoints used (``auth-token`` header; docs at docs.electricitymaps.com):
``/carbon-intensity/latest`` (the current hour), ``/carbon-intensity/history``
(the past 24 hours, free tier), ``/carbon-intensity/past-range`` (older
spans, commercial plans, at most 10 days a request) and
``/carbon-intensity/forecast`` (where the plan includes it). Values are
gCO2eq/kWh of the consumption mix; ``emissionFactorType`` picks life-cycle
or direct factors. Zone fallback by the caller's IP is always disabled: the
location is never guessed from the network.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from greenml.accounting.intensity import (
    GridIntensity,
    IntensityProvenance,
    Resolution,
    Scope,
    gap_note,
)
from greenml.accounting.live._points import (
    Point,
    chunks,
    count_flag,
    covering,
    floor_to,
    iso,
    parse_time,
    to_series,
)
from greenml.accounting.live.http import ApiClient, HttpSettings
from greenml.errors import ConfigError

if TYPE_CHECKING:
    import httpx

PROVIDER = "Electricity Maps"
TOKEN_ENV = "GREENML_ELECTRICITYMAPS_TOKEN"
HOUR_S = 3600.0
_HISTORY_HOURS = 23  # /history covers the past 24 h; trust 23 full hours of it
_PAST_RANGE_MAX_S = 240 * HOUR_S  # documented limit for hourly past-range


class ElectricityMapsSource:
    """Hourly carbon intensity of one Electricity Maps zone.

    Args:
        zone: Zone key, e.g. ``DE``, ``FR``, ``US-CAL-CISO``.
        token: API token; defaults to ``$GREENML_ELECTRICITYMAPS_TOKEN``.
        base_url: API root, up to and including ``/v3``.
        emission_factor_type: ``lifecycle`` (the API's default) or ``direct``.
        client: An ``httpx.Client`` to reuse; one is made when omitted.
        http: Timeouts and retries.
        clock: Current Unix time (tests pass a fixed one).

    Raises:
        ConfigError: No token, an empty zone, or an unknown factor type.
    """

    def __init__(
        self,
        zone: str,
        token: str | None = None,
        base_url: str = "https://api.electricitymap.org/v3",
        emission_factor_type: str = "lifecycle",
        client: httpx.Client | None = None,
        *,
        http: HttpSettings | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not zone or not zone.strip():
            raise ConfigError("Electricity Maps needs a zone, e.g. DE or US-CAL-CISO")
        if emission_factor_type not in ("lifecycle", "direct"):
            raise ConfigError(
                f"Electricity Maps emission factor type must be lifecycle or direct, "
                f"got {emission_factor_type!r}"
            )
        from_env = token is None
        token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        if not token:
            raise ConfigError(
                f"Electricity Maps needs an API token: pass token= or set {TOKEN_ENV}"
            )
        self.zone = zone.strip()
        self.scope: Scope = "lifecycle" if emission_factor_type == "lifecycle" else "direct"
        self._token = token
        self._clock = clock or time.time
        where = TOKEN_ENV if from_env else "the token given to ElectricityMapsSource"
        self._api = ApiClient(
            PROVIDER,
            base_url,
            settings=http,
            client=client,
            hints={
                401: f"check {where}",
                403: f"the token's plan does not cover this endpoint or zone {self.zone}",
            },
            secrets=[token],
        )

    def __repr__(self) -> str:
        return f"ElectricityMapsSource(zone={self.zone!r}, scope={self.scope!r})"

    def close(self) -> None:
        """Close the HTTP client this source made."""
        self._api.close()

    def latest(self) -> GridIntensity:
        """The intensity of the current hour (``/carbon-intensity/latest``)."""
        point = self._point(self._get("/carbon-intensity/latest"), "/carbon-intensity/latest")
        if point is None:
            raise self._api.bad_response("/carbon-intensity/latest", "carbonIntensity is null")
        return self._grid([point], "latest", "live")

    def history(self) -> GridIntensity:
        """The past 24 hours, hourly (``/carbon-intensity/history``).

        Raises:
            ConfigError: An hour inside the returned day has no value.
        """
        points = self._list("/carbon-intensity/history", "history")
        if not points:
            raise ConfigError(f"Electricity Maps returned no history for {self.zone}")
        points = covering(points, points[0].start_s, points[-1].end_s, self._missing())
        return self._grid(points, "history", "hourly")

    def forecast(self) -> GridIntensity:
        """The coming hours, hourly (``/carbon-intensity/forecast``; not on every plan)."""
        hints = {403: f"the token's plan does not include forecasts for {self.zone}"}
        points = self._list("/carbon-intensity/forecast", "forecast", hints=hints)
        if not points:
            raise ConfigError(f"Electricity Maps returned no forecast for {self.zone}")
        points = covering(points, points[0].start_s, points[-1].end_s, self._missing())
        return self._grid(points, "forecast", "hourly")

    def forecast_span(self, start_s: float, end_s: float) -> GridIntensity:
        """The provider's forecast for planning a job in [start_s, end_s] (all it has)."""
        return self.forecast()

    def past_range(self, start_s: float, end_s: float) -> GridIntensity:
        """Hourly values over a past span (``/carbon-intensity/past-range``, commercial plans)."""
        points = covering(self._past_range(start_s, end_s), start_s, end_s, self._missing())
        return self._grid(points, "past-range", "hourly")

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        """Intensity covering [start_s, end_s]: history or past-range, plus latest.

        Hours before the current one come from ``/history`` when the span lies
        within the past day and from ``/past-range`` otherwise; the current
        hour, when the span reaches it, from ``/latest``.

        Raises:
            ConfigError: Part of the span has no data; the message names it.
            IntensityApiError: The API could not be reached or refused.
        """
        if end_s < start_s:
            raise ConfigError("intensity span ends before it starts")
        current_hour = floor_to(self._clock(), HOUR_S)
        points: list[Point] = []
        used: list[str] = []
        if start_s < current_hour:
            if start_s >= current_hour - _HISTORY_HOURS * HOUR_S:
                points += self._list("/carbon-intensity/history", "history")
                used.append("history")
            else:
                points += self._past_range(start_s, min(end_s, current_hour))
                used.append("past-range")
        reached = max((p.end_s for p in points if p.start_s <= end_s), default=start_s)
        if end_s >= current_hour and (reached < end_s or not points):
            latest = self._point(self._get("/carbon-intensity/latest"), "/carbon-intensity/latest")
            if latest is not None:
                points.append(latest)
            used.append("latest")
        points = covering(points, start_s, end_s, self._missing())
        resolution: Resolution = "live" if used == ["latest"] else "hourly"
        return self._grid(points, " + ".join(used), resolution)

    # -- internals ---------------------------------------------------------

    def _get(
        self, path: str, extra: dict[str, str] | None = None, hints: dict[int, str] | None = None
    ) -> Any:
        params = {
            "zone": self.zone,
            "emissionFactorType": self.scope,
            "shouldUseFallbackCallerLookup": "false",
            **(extra or {}),
        }
        body = self._api.get_json(path, params, {"auth-token": self._token}, hints=hints)
        if not isinstance(body, dict):
            raise self._api.bad_response(path, "expected a JSON object")
        zone = body.get("zone")
        if zone is not None and zone != self.zone:
            raise self._api.bad_response(path, f"data for zone {zone}, asked for {self.zone}")
        return body

    def _list(self, path: str, key: str, hints: dict[int, str] | None = None) -> list[Point]:
        items = self._get(path, hints=hints).get(key)
        if not isinstance(items, list):
            raise self._api.bad_response(path, f"no {key!r} list")
        return [p for p in (self._point(item, path) for item in items) if p is not None]

    def _past_range(self, start_s: float, end_s: float) -> list[Point]:
        path = "/carbon-intensity/past-range"
        hints = {403: f"the token's plan does not include past-range for {self.zone}"}
        points: list[Point] = []
        for a, b in chunks(floor_to(start_s, HOUR_S), end_s, _PAST_RANGE_MAX_S):
            items = self._get(path, {"start": iso(a), "end": iso(b)}, hints).get("data")
            if not isinstance(items, list):
                raise self._api.bad_response(path, "no 'data' list")
            points += [p for p in (self._point(item, path) for item in items) if p is not None]
        return points

    def _point(self, item: Any, path: str) -> Point | None:
        """One documented object (``datetime``, ``carbonIntensity``, ``isEstimated``)."""
        if not isinstance(item, dict):
            raise self._api.bad_response(path, "expected objects with datetime and carbonIntensity")
        factor = item.get("emissionFactorType")
        if factor is not None and factor != self.scope:
            raise self._api.bad_response(path, f"{factor} factors, asked for {self.scope}")
        value = item.get("carbonIntensity")
        if value is None:
            return None  # an hour without data: left as a gap, never filled
        try:
            start = parse_time(item.get("datetime"))
            g_per_kwh = float(value)
        except (TypeError, ValueError) as exc:
            raise self._api.bad_response(path, str(exc)) from None
        flag = "estimated" if item.get("isEstimated") else ""
        return Point(start, start + HOUR_S, g_per_kwh, flag)

    def _grid(self, points: list[Point], endpoints: str, resolution: Resolution) -> GridIntensity:
        estimated = count_flag(points, "estimated")
        note = f"; {gap_note(estimated, len(points))}" if estimated else ""
        provenance = IntensityProvenance(
            source=f"Electricity Maps API v3 (carbon-intensity/{endpoints}{note})",
            location=self.zone,
            resolution=resolution,
            kind="average",
            scope=self.scope,
        )
        return GridIntensity(to_series(points), provenance)

    def _missing(self) -> str:
        return f"Electricity Maps has no {self.scope} carbon-intensity data for {self.zone}"
