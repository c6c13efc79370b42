"""WattTime API v3: marginal (MOER) or average (AOER) CO2 emission rates of a grid region.

``/login`` (HTTP basic auth) gives a bearer token valid for 30 minutes; this
source caches it until shortly before then and logs in again once if the API
refuses it earlier. Data come from ``/v3/historical`` (at most 30 days a
request here), ``/v3/forecast`` and ``/v3/signal-index`` (a 0–100 percentile,
not an intensity). Values arrive in lbs CO2/MWh and are converted to
g/kWh: 1 lb/MWh = 453.59237 g / 1000 kWh = 0.45359237 g/kWh.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from greenml.accounting.intensity import GridIntensity, IntensityProvenance, Kind, Resolution
from greenml.accounting.live._points import (
    Point,
    chunks,
    covering,
    floor_to,
    iso,
    parse_time,
    to_series,
)
from greenml.accounting.live.http import ApiClient, HttpSettings
from greenml.errors import ConfigError, IntensityApiError

if TYPE_CHECKING:
    import httpx

PROVIDER = "WattTime"
USER_ENV = "GREENML_WATTTIME_USERNAME"
PASSWORD_ENV = "GREENML_WATTTIME_PASSWORD"
G_PER_KWH_PER_LB_PER_MWH = 0.45359237  # 1 lb = 453.59237 g; 1 MWh = 1000 kWh
TOKEN_LIFETIME_S = 30 * 60.0  # documented lifetime of a /login token
_TOKEN_MARGIN_S = 60.0
_HISTORICAL_MAX_S = 30 * 86400.0
_MAX_HORIZON_H = 72  # the longest forecast /v3/forecast serves
_KINDS: dict[str, Kind] = {"co2_moer": "marginal", "co2_aoer": "average"}


@dataclass(frozen=True)
class SignalIndex:
    """Where the current rate sits among the next day's (``/v3/signal-index``).

    Attributes:
        time_s: Start of the period it applies to (Unix seconds).
        percentile: 0 (cleanest) to 100 (dirtiest).
    """

    time_s: float
    percentile: float


class WattTimeSource:
    """Five-minute MOER (or AOER) of one WattTime region.

    Args:
        region: Region abbreviation, e.g. ``CAISO_NORTH``.
        username: Defaults to ``$GREENML_WATTTIME_USERNAME``.
        password: Defaults to ``$GREENML_WATTTIME_PASSWORD``.
        token: A bearer token already obtained; used until the API refuses it.
        base_url: API root (without ``/v3``).
        signal_type: ``co2_moer`` (marginal) or ``co2_aoer`` (average).
        client: An ``httpx.Client`` to reuse; one is made when omitted.
        http: Timeouts and retries.
        clock: Current Unix time, for the token's expiry (tests pass a manual one).

    Raises:
        ConfigError: Neither a token nor both credentials, or an unknown signal.
    """

    def __init__(
        self,
        region: str,
        username: str | None = None,
        password: str | None = None,
        token: str | None = None,
        base_url: str = "https://api.watttime.org",
        signal_type: str = "co2_moer",
        client: httpx.Client | None = None,
        *,
        http: HttpSettings | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if not region or not region.strip():
            raise ConfigError("WattTime needs a region, e.g. CAISO_NORTH")
        if signal_type not in _KINDS:
            raise ConfigError(
                f"WattTime signal type must be one of {', '.join(_KINDS)}, got {signal_type!r}"
            )
        self.region = region.strip()
        self.signal_type = signal_type
        self._username = username if username is not None else os.environ.get(USER_ENV, "")
        self._password = password if password is not None else os.environ.get(PASSWORD_ENV, "")
        if not token and not (self._username and self._password):
            raise ConfigError(
                f"WattTime needs a username and password: pass them or set {USER_ENV} "
                f"and {PASSWORD_ENV}"
            )
        self._token = token or ""
        self._expires_s = float("inf") if token else 0.0
        self._clock = clock or time.time
        self._api = ApiClient(
            PROVIDER,
            base_url,
            settings=http,
            client=client,
            hints={403: f"the account's plan does not cover {signal_type} for {self.region}"},
            secrets=[s for s in (token, self._password) if s],
        )

    def __repr__(self) -> str:
        return f"WattTimeSource(region={self.region!r}, signal_type={self.signal_type!r})"

    def close(self) -> None:
        """Close the HTTP client this source made."""
        self._api.close()

    def historical(self, start_s: float, end_s: float) -> GridIntensity:
        """Values over a past span (``/v3/historical``).

        Raises:
            ConfigError: Part of the span has no data; the message names it.
        """
        points = covering(self._historical(start_s, end_s), start_s, end_s, self._missing())
        return self._grid(points, "historical")

    def forecast(self, horizon_hours: int = 24) -> GridIntensity:
        """The latest forecast (``/v3/forecast``); its first point is the current period."""
        points = self._forecast(horizon_hours)
        if not points:
            raise ConfigError(f"WattTime returned an empty forecast for {self.region}")
        points = covering(points, points[0].start_s, points[-1].end_s, self._missing())
        return self._grid(points, "forecast")

    def forecast_span(self, start_s: float, end_s: float) -> GridIntensity:
        """The forecast far enough ahead to reach ``end_s`` (WattTime offers up to 72 h)."""
        hours = math.ceil((end_s - self._clock()) / 3600.0)
        return self.forecast(horizon_hours=max(1, min(_MAX_HORIZON_H, hours)))

    def signal_index(self) -> SignalIndex:
        """The current percentile of the signal (``/v3/signal-index``)."""
        path = "/v3/signal-index"
        body = self._get(path, {})
        data = body.get("data")
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            raise self._api.bad_response(path, "no 'data' list")
        try:
            return SignalIndex(parse_time(data[0].get("point_time")), float(data[0]["value"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise self._api.bad_response(path, f"bad point ({exc})") from None

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        """Intensity covering [start_s, end_s] from ``/v3/historical``.

        Historical data lag real time by a few minutes; when the span runs
        into that lag, the current forecast's first points fill the tail and
        the provenance says so.

        Raises:
            ConfigError: Part of the span has no data; the message names it.
            IntensityApiError: The API could not be reached or refused.
        """
        if end_s < start_s:
            raise ConfigError("intensity span ends before it starts")
        points = self._historical(start_s, end_s)
        used = "historical"
        reached = max((p.end_s for p in points), default=start_s)
        if reached < end_s and end_s >= self._clock() - 3600.0:
            tail = [p for p in self._forecast(1) if p.start_s >= reached]
            if tail:
                points += tail
                used = "historical + current forecast"
        points = covering(points, start_s, end_s, self._missing())
        return self._grid(points, used)

    # -- internals ---------------------------------------------------------

    def _bearer(self) -> str:
        if self._token and self._clock() < self._expires_s:
            return self._token
        # Credentials are set: the constructor demands them when no token is given,
        # and a given token is dropped only when credentials can replace it.
        hints = {401: f"check {USER_ENV} and {PASSWORD_ENV}", 403: "check the account"}
        body = self._api.get_json("/login", auth=(self._username, self._password), hints=hints)
        token = body.get("token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise self._api.bad_response("/login", "no 'token'")
        self._api.add_secret(token)
        self._token = token
        self._expires_s = self._clock() + TOKEN_LIFETIME_S - _TOKEN_MARGIN_S
        return token

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        query = {"region": self.region, "signal_type": self.signal_type, **params}
        can_login = bool(self._username and self._password)
        for retry in (False, True):
            headers = {"Authorization": f"Bearer {self._bearer()}"}
            hints = {
                401: "the token given to WattTimeSource was refused (tokens last 30 minutes)"
                if self._expires_s == float("inf")
                else f"the token from /login was refused; check {USER_ENV}"
            }
            try:
                body = self._api.get_json(path, query, headers, hints=hints)
                break
            except IntensityApiError as exc:
                if exc.status != 401 or retry or not can_login:
                    raise
                self._expires_s = 0.0  # refused before its time: log in once more
        if not isinstance(body, dict):
            raise self._api.bad_response(path, "expected a JSON object")
        return body

    def _historical(self, start_s: float, end_s: float) -> list[Point]:
        points: list[Point] = []
        for a, b in chunks(floor_to(start_s, 3600.0), end_s, _HISTORICAL_MAX_S):
            points += self._points("/v3/historical", {"start": iso(a), "end": iso(b)})
        return points

    def _forecast(self, horizon_hours: int) -> list[Point]:
        return self._points("/v3/forecast", {"horizon_hours": str(horizon_hours)})

    def _points(self, path: str, params: dict[str, str]) -> list[Point]:
        """``{"data": [{"point_time", "value"}], "meta": {...}}`` into g/kWh points."""
        body = self._get(path, params)
        meta, data = body.get("meta"), body.get("data")
        if not isinstance(meta, dict) or not isinstance(data, list):
            raise self._api.bad_response(path, "no 'meta' object or 'data' list")
        if meta.get("region") not in (None, self.region):
            raise self._api.bad_response(path, f"data for {meta['region']}, asked {self.region}")
        units = meta.get("units")
        if units != "lbs_co2_per_mwh":
            raise self._api.bad_response(path, f"units {units!r}, expected lbs_co2_per_mwh")
        try:
            period = float(meta.get("data_point_period_seconds", 300))
            points = []
            for item in data:
                if item.get("value") is None:
                    continue  # missing period: left as a gap
                start = parse_time(item.get("point_time"))
                value = float(item["value"]) * G_PER_KWH_PER_LB_PER_MWH
                points.append(Point(start, start + period, value))
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise self._api.bad_response(path, f"bad point ({exc})") from None
        return points

    def _grid(self, points: list[Point], endpoints: str) -> GridIntensity:
        step = points[-1].end_s - points[-1].start_s
        resolution: Resolution = "sub-hourly" if step < 3600.0 else "hourly"
        provenance = IntensityProvenance(
            source=f"WattTime API v3 ({self.signal_type}, {endpoints})",
            location=self.region,
            resolution=resolution,
            kind=_KINDS[self.signal_type],
            scope="direct",
        )
        return GridIntensity(to_series(points), provenance)

    def _missing(self) -> str:
        return f"WattTime has no {self.signal_type} data for {self.region}"
