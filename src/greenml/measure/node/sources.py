"""Node meters greenml can read: each a :class:`NodeSource` that returns one reading.

A source knows where it reads, what kind of meter it is, how good that meter is
(``uncertainty_rel``) and how to read it once (:meth:`NodeSource.read`). It does
no threading and no integration: :class:`~greenml.measure.node.sensor.NodeSensor`
polls it and the Meter integrates. Every failure is a
:class:`~greenml.errors.SensorError` with one line saying why.

Uncertainties, as the meters' makers state them (see the node-meter docs page):
a BMC's input-power sensor (Redfish, IPMI DCMI) ±5 %; a Shelly Gen2 plug ±2 %;
a Tasmota plug ±5 % (HLW8012/BL0937 chips after calibration); a metered PDU
outlet ±2 % (IEC 62053-21 class 1 meters, plus the outlet's share); a hwmon
PSU or board monitor ±10 % (see :mod:`greenml.measure.sensors.hwmon`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from greenml.errors import SensorError
from greenml.measure.node import responses
from greenml.measure.node.responses import NodeReading

BMC_UNCERTAINTY = 0.05
SHELLY_UNCERTAINTY = 0.02
TASMOTA_UNCERTAINTY = 0.05
PDU_UNCERTAINTY = 0.02
JSON_UNCERTAINTY = 0.05
HWMON_NODE_UNCERTAINTY = 0.10
TIMEOUT_S = 5.0


class NodeSource(ABC):
    """One node meter: where it is, what it is, and one read of it."""

    kind: str = ""
    uncertainty_rel: float = 0.05

    def __init__(self, where: str, uncertainty_rel: float | None = None) -> None:
        self.where = where
        if uncertainty_rel is not None:
            self.uncertainty_rel = uncertainty_rel

    @property
    def label(self) -> str:
        """``kind where``, as shown in notes and the record."""
        return f"{self.kind} {self.where}"

    @abstractmethod
    def read(self) -> NodeReading:
        """Read the meter once.

        Raises:
            SensorError: The meter could not be reached or its answer not read.
        """

    def close(self) -> None:  # noqa: B027 - most sources hold nothing
        """Release what the source holds."""


class HttpJsonSource(NodeSource):
    """A meter that answers JSON over HTTP (Shelly, Tasmota, any JSON with a JSONPath)."""

    def __init__(self, kind: str, url: str, parse: Any, uncertainty_rel: float | None = None,
                 *, auth: tuple[str, str] | None = None, verify: bool = True) -> None:  # fmt: skip
        super().__init__(url, uncertainty_rel)
        self.kind = kind
        self.url = url
        self._parse = parse
        self._auth = auth
        self._verify = verify
        self._client: Any = None

    def get_json(self, url: str) -> Any:
        """GET ``url`` and decode its JSON body."""
        import httpx  # lazy: only when a node meter is configured

        if self._client is None:
            self._client = httpx.Client(timeout=TIMEOUT_S, auth=self._auth, verify=self._verify)
        try:
            response = self._client.get(url)
            response.raise_for_status()
            return response.json()
        except httpx.HTTPStatusError as exc:
            raise SensorError(f"{url}: HTTP {exc.response.status_code}") from None
        except httpx.HTTPError as exc:
            raise SensorError(f"{url}: {type(exc).__name__}: {exc}") from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise SensorError(f"{url}: the answer is not JSON") from None

    def read(self) -> NodeReading:
        reading: NodeReading = self._parse(self.get_json(self.url))
        return reading

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class RedfishSource(HttpJsonSource):
    """A BMC's Redfish service: the chassis ``Power`` (else ``EnvironmentMetrics``) resource.

    ``chassis`` names one (``/redfish/v1/Chassis/1U``); by default the first member
    of ``/redfish/v1/Chassis`` that has a power reading is used.
    """

    def __init__(self, base: str, chassis: str | None = None,
                 uncertainty_rel: float | None = None, *, auth: tuple[str, str] | None = None,
                 verify: bool = True) -> None:  # fmt: skip
        super().__init__("redfish", base, responses.redfish_power,
                         BMC_UNCERTAINTY if uncertainty_rel is None else uncertainty_rel,
                         auth=auth, verify=verify)  # fmt: skip
        self.base = base.rstrip("/")
        self._chassis = chassis
        self._resolved: str | None = None

    def _members(self) -> list[str]:
        if self._chassis:
            return [self._chassis]
        body = self.get_json(f"{self.base}/redfish/v1/Chassis")
        members = body.get("Members") if isinstance(body, dict) else None
        ids = [m.get("@odata.id") for m in members or [] if isinstance(m, dict)]
        if not ids:
            raise SensorError(f"{self.base}/redfish/v1/Chassis lists no chassis")
        return [str(i) for i in ids if i]

    def read(self) -> NodeReading:
        if self._resolved is not None:
            return self._read(self._resolved)
        errors = []
        for member in self._members():
            for path in (f"{member.rstrip('/')}/Power", f"{member.rstrip('/')}/EnvironmentMetrics"):
                try:
                    reading = self._read(path)
                except SensorError as exc:
                    errors.append(str(exc))
                    continue
                self._resolved = path
                self.where = f"{self.base}{path}"
                return reading
        raise SensorError("; ".join(errors) or f"{self.base}: no chassis power reading")

    def _read(self, path: str) -> NodeReading:
        body = self.get_json(f"{self.base}{path}")
        if path.endswith("/EnvironmentMetrics"):
            return responses.redfish_environment(body)
        return responses.redfish_power(body)


class IpmiSource(NodeSource):
    """``ipmitool dcmi power reading``: in-band (``/dev/ipmi0``) or over the LAN (lanplus)."""

    kind = "ipmi"
    uncertainty_rel = BMC_UNCERTAINTY

    def __init__(self, host: str | None, port: int | None = None, user: str | None = None,
                 password: str | None = None, uncertainty_rel: float | None = None,
                 interface: str = "lanplus") -> None:  # fmt: skip
        super().__init__(f"{host}:{port or 623}" if host else "local BMC", uncertainty_rel)
        args = ["dcmi", "power", "reading"]
        if host:
            lan = ["-I", interface, "-H", host, "-p", str(port or 623)]
            lan += ["-U", user or "", "-P", password or ""]
            args = lan + args
        self.args = args

    def read(self) -> NodeReading:
        tool = shutil.which("ipmitool")
        if tool is None:
            raise SensorError("ipmitool is not installed (apt-get install ipmitool)")
        try:
            done = subprocess.run([tool, *self.args], capture_output=True, text=True,
                                  timeout=TIMEOUT_S * 2, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            why = f"ipmitool ({self.where}) gave no answer in {TIMEOUT_S * 2:g} s"
            raise SensorError(why) from None
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines()
            raise SensorError(f"ipmitool ({self.where}): {lines[-1] if lines else done.returncode}")
        return responses.dcmi_power(done.stdout)


class HwmonNodeSource(NodeSource):
    """A hwmon chip that measures the node (a PSU, a board monitor): its power channels
    summed (µW), and its energy channels (µJ) when it has them."""

    kind = "hwmon"
    uncertainty_rel = HWMON_NODE_UNCERTAINTY

    def __init__(self, chip: Path, uncertainty_rel: float | None = None) -> None:
        from greenml.measure.sensors.hwmon import channels, read_text

        name = read_text(chip / "name") or chip.name
        super().__init__(f"{chip} ({name})", uncertainty_rel)
        self.chip = chip
        self.power = [chip / f"power{n}_input" for n in channels(chip, "power")]
        self.energy = [chip / f"energy{n}_input" for n in channels(chip, "energy")]
        if not self.power and not self.energy:
            raise SensorError(f"hwmon chip {chip} has no power*_input or energy*_input")

    def read(self) -> NodeReading:
        power = [self._micro(p) for p in self.power]
        energy = [self._micro(p) for p in self.energy]
        return NodeReading(sum(power), sum(energy) if energy else None)

    @staticmethod
    def _micro(path: Path) -> float:
        try:
            return int(path.read_text().strip()) / 1e6
        except (OSError, ValueError) as exc:
            raise SensorError(f"{path}: {exc}") from None
