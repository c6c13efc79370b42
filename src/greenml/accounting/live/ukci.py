"""Carbon Intensity API for Great Britain (NESO, api.carbonintensity.org.uk): half-hourly, no key.

National figures come with a ``forecast`` and, once published, an estimated
``actual``; regional figures (by outward postcode or region id 1–17) are
forecasts only. This source uses ``actual`` where present and ``forecast``
otherwise, and says which in the provenance. The API's figures count CO2 from
electricity generation only (no upstream life-cycle emissions): scope
``direct``, kind ``average``. Ranges are asked for at most 14 days at a time.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from greenml.accounting.intensity import GridIntensity, IntensityProvenance, Resolution
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

PROVIDER = "Carbon Intensity API (GB)"
SOURCE = "Carbon Intensity API, NESO (carbonintensity.org.uk)"
HALF_HOUR_S = 1800.0
_RANGE_MAX_S = 14 * 86400.0
_OUTWARD = re.compile(r"^[A-Z]{1,2}[0-9][A-Z0-9]?$")


class UkCarbonIntensitySource:
    """Half-hourly carbon intensity of Great Britain, a region, or a postcode's region.

    Args:
        postcode: Outward part of a GB postcode (``RG10``; a full postcode is cut).
        region_id: A region id from 1 to 17 (15 England, 16 Scotland, 17 Wales).
        base_url: API root.
        client: An ``httpx.Client`` to reuse; one is made when omitted.
        http: Timeouts and retries.

    Without ``postcode`` or ``region_id`` the figures are national.

    Raises:
        ConfigError: Both a postcode and a region, a malformed postcode, or a
            region id outside 1–17.
    """

    def __init__(
        self,
        postcode: str | None = None,
        region_id: int | None = None,
        base_url: str = "https://api.carbonintensity.org.uk",
        client: httpx.Client | None = None,
        *,
        http: HttpSettings | None = None,
    ) -> None:
        if postcode is not None and region_id is not None:
            raise ConfigError(
                "give the GB carbon intensity source a postcode or a region, not both"
            )
        self.postcode: str | None = None
        if postcode is not None:
            outward = postcode.strip().upper().split(" ")[0] if postcode.strip() else ""
            if not _OUTWARD.match(outward):
                raise ConfigError(
                    f"not an outward GB postcode: {postcode!r} (expected e.g. RG10, SW1, EH1)"
                )
            self.postcode = outward
        if region_id is not None and not (isinstance(region_id, int) and 1 <= region_id <= 17):
            raise ConfigError(f"GB region id must be 1–17, got {region_id!r}")
        self.region_id = region_id
        self._api = ApiClient(PROVIDER, base_url, settings=http, client=client)

    def __repr__(self) -> str:
        return f"UkCarbonIntensitySource({self._target()})"

    def close(self) -> None:
        """Close the HTTP client this source made."""
        self._api.close()

    def latest(self) -> GridIntensity:
        """The current half-hour (``/intensity`` or ``/regional/...``)."""
        if self.postcode is not None:
            path = f"/regional/postcode/{self.postcode}"
        elif self.region_id is not None:
            path = f"/regional/regionid/{self.region_id}"
        else:
            path = "/intensity"
        points, name = self._fetch(path)
        if not points:
            raise ConfigError(f"{PROVIDER} returned no current figure for {self._where(name)}")
        return self._grid(points[-1:], name, "live")

    def forecast_span(self, start_s: float, end_s: float) -> GridIntensity:
        """Half-hourly values over [start_s, end_s]: forecasts ahead of now (up to 48 h)."""
        return self.intensity(start_s, end_s)

    def intensity(self, start_s: float, end_s: float) -> GridIntensity:
        """Intensity covering [start_s, end_s] (``/intensity/{from}/{to}`` or regional).

        Raises:
            ConfigError: Part of the span has no data; the message names it.
            IntensityApiError: The API could not be reached or answered nonsense.
        """
        if end_s < start_s:
            raise ConfigError("intensity span ends before it starts")
        points: list[Point] = []
        name = ""
        first = floor_to(start_s, HALF_HOUR_S)
        last = max(floor_to(end_s, HALF_HOUR_S) + HALF_HOUR_S, first + HALF_HOUR_S)
        for a, b in chunks(first, last, _RANGE_MAX_S):
            span = f"{iso(a, seconds=False)}/{iso(b, seconds=False)}"
            if self.postcode is not None:
                path = f"/regional/intensity/{span}/postcode/{self.postcode}"
            elif self.region_id is not None:
                path = f"/regional/intensity/{span}/regionid/{self.region_id}"
            else:
                path = f"/intensity/{span}"
            got, name = self._fetch(path)
            points += got
        missing = f"{PROVIDER} has no data for {self._where(name)}"
        return self._grid(covering(points, start_s, end_s, missing), name, "sub-hourly")

    # -- internals ---------------------------------------------------------

    def _fetch(self, path: str) -> tuple[list[Point], str]:
        """Periods and the region's short name from any of the documented shapes."""
        body = self._api.get_json(path)
        data = body.get("data") if isinstance(body, dict) else None
        name = ""
        if isinstance(data, list) and data and isinstance(data[0], dict) and "data" in data[0]:
            data = data[0]  # /regional/postcode/{pc}: [{regionid, shortname, data: [...]}]
        if isinstance(data, dict):  # /regional/intensity/...: {regionid, shortname, data: [...]}
            name = str(data.get("shortname") or "")
            data = data.get("data")
        if not isinstance(data, list):
            raise self._api.bad_response(path, "no 'data' list")
        return [p for p in (self._period(item, path) for item in data) if p is not None], name

    def _period(self, item: Any, path: str) -> Point | None:
        """``{"from", "to", "intensity": {"forecast", "actual", "index"}}`` into a point."""
        try:
            start, end = parse_time(item["from"]), parse_time(item["to"])
            figures = item["intensity"]
            actual, forecast = figures.get("actual"), figures.get("forecast")
            if actual is not None:
                point = Point(start, end, float(actual), "actual")
            elif forecast is not None:
                point = Point(start, end, float(forecast), "forecast")
            else:
                return None  # neither figure published: left as a gap
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise self._api.bad_response(path, f"bad period ({exc})") from None
        if end <= start:
            raise self._api.bad_response(path, f"period from {item['from']} ends before it starts")
        return point

    def _grid(self, points: list[Point], name: str, resolution: Resolution) -> GridIntensity:
        actual = count_flag(points, "actual")
        if actual == len(points):
            figures = "actual"
        elif actual == 0:
            figures = "forecast"
        else:
            figures = f"actual for {actual} of {len(points)} half-hours, forecast for the rest"
        provenance = IntensityProvenance(
            source=f"{SOURCE}, {figures}",
            location=self._where(name),
            resolution=resolution,
            kind="average",
            scope="direct",
        )
        return GridIntensity(to_series(points), provenance)

    def _where(self, name: str) -> str:
        suffix = f" ({name})" if name else ""
        if self.postcode is not None:
            return f"GB postcode {self.postcode}{suffix}"
        if self.region_id is not None:
            return f"GB region {self.region_id}{suffix}"
        return "GB"

    def _target(self) -> str:
        if self.postcode is not None:
            return f"postcode={self.postcode!r}"
        if self.region_id is not None:
            return f"region_id={self.region_id}"
        return "national"
