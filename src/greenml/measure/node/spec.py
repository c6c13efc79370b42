"""One string names a node meter (``--node-meter``, ``GREENML_NODE_METER``, ``[node] meter``).

=====================================================  ==============================
``redfish://USER:PASS@HOST[:PORT][/redfish/v1/Chassis/ID]``  a BMC's Redfish (HTTPS;
                                                       ``redfish+http://`` for plain HTTP)
``ipmi://USER:PASS@HOST[:PORT]`` or ``ipmi://local``   ``ipmitool dcmi power reading``
``hwmon:/sys/class/hwmon/hwmonN`` or ``hwmon:NAME``    a PSU/board hwmon chip
``shelly://HOST[:PORT][?id=0]``                        Shelly Gen2 ``Switch.GetStatus``
``tasmota://HOST[:PORT]``                              Tasmota ``Status 8``
``snmp://COMMUNITY@HOST[:PORT]/OID[?scale=0.1]``       a metered PDU outlet
``http(s)://HOST/PATH#JSONPATH``                       any JSON; the path selects watts
=====================================================  ==============================

Every form takes ``?uncertainty=0.03`` (the meter's relative error, if you know
it better than greenml's default), and the HTTPS ones ``?verify=false`` (a BMC's
self-signed certificate).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from greenml.errors import ConfigError
from greenml.measure.node import responses
from greenml.measure.node.sources import (
    JSON_UNCERTAINTY,
    SHELLY_UNCERTAINTY,
    TASMOTA_UNCERTAINTY,
    HttpJsonSource,
    HwmonNodeSource,
    IpmiSource,
    NodeSource,
    RedfishSource,
)

SCHEMES = ("redfish", "redfish+http", "ipmi", "hwmon", "shelly", "tasmota", "snmp", "http", "https")


def _number(query: dict[str, list[str]], key: str, spec: str) -> float | None:
    if key not in query:
        return None
    try:
        value = float(query[key][-1])
    except ValueError:
        why = f"node meter {spec!r}: {key}={query[key][-1]!r} is not a number"
        raise ConfigError(why) from None
    if not value >= 0 or value != value or value == float("inf"):
        raise ConfigError(f"node meter {spec!r}: {key} must be a number >= 0")
    return value


def parse_node_meter(spec: str, sys_root: Path = Path("/")) -> NodeSource:
    """The source a node-meter string names.

    Raises:
        ConfigError: The string names no node meter greenml knows, or misses a part.
    """
    text = spec.strip()
    scheme = text.partition(":")[0].lower()
    if scheme not in SCHEMES:
        raise ConfigError(f"node meter {spec!r}: give one of {', '.join(s + ':' for s in SCHEMES)}")
    if scheme == "hwmon":
        return _hwmon(text.partition(":")[2], spec, sys_root)
    parts = urlsplit(text)
    query = parse_qs(parts.query)
    unc = _number(query, "uncertainty", spec)
    if unc is not None and unc > 1:
        raise ConfigError(f"node meter {spec!r}: uncertainty is relative (0.05 = ±5 %)")
    host = parts.hostname
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"node meter {spec!r}: the port is not a number") from None
    auth = None
    if parts.username:
        auth = (unquote(parts.username), unquote(parts.password or ""))
    verify = query.get("verify", ["true"])[-1].lower() not in ("false", "0", "no")
    if scheme == "ipmi":
        if host in (None, "", "local", "localhost") and not port:
            return IpmiSource(None, uncertainty_rel=unc)
        user, password = auth or (None, None)
        return IpmiSource(host, port, user, password, uncertainty_rel=unc)
    if not host:
        raise ConfigError(f"node meter {spec!r}: no host")
    netloc = f"{host}:{port}" if port else host
    if ":" in host:  # IPv6
        netloc = f"[{host}]:{port}" if port else f"[{host}]"
    if scheme in ("redfish", "redfish+http"):
        base = f"{'http' if scheme == 'redfish+http' else 'https'}://{netloc}"
        chassis = parts.path.rstrip("/") or None
        return RedfishSource(base, chassis, unc, auth=auth, verify=verify)
    if scheme == "shelly":
        switch = query.get("id", ["0"])[-1]
        if not switch.isdigit():
            raise ConfigError(f"node meter {spec!r}: id must be a switch number")
        url = f"http://{netloc}/rpc/Switch.GetStatus?id={switch}"
        return HttpJsonSource("shelly", url, responses.shelly_switch,
                              SHELLY_UNCERTAINTY if unc is None else unc, auth=auth)  # fmt: skip
    if scheme == "tasmota":
        url = f"http://{netloc}/cm?cmnd=Status%208"
        return HttpJsonSource("tasmota", url, responses.tasmota_status8,
                              TASMOTA_UNCERTAINTY if unc is None else unc, auth=auth)  # fmt: skip
    if scheme == "snmp":
        from greenml.measure.node.snmp import SnmpSource

        oid = parts.path.strip("/")
        if not oid or not all(p.isdigit() for p in oid.split(".")):
            raise ConfigError(f"node meter {spec!r}: give the outlet's numeric OID as the path")
        scale = _number(query, "scale", spec)
        return SnmpSource(host, port or 161, oid, unquote(parts.username or "public"),
                          1.0 if scale is None else scale, unc)  # fmt: skip
    path = unquote(parts.fragment)
    if not path:
        raise ConfigError(f"node meter {spec!r}: add the JSONPath of the watts after '#'")
    try:
        responses.compile_path(path)
    except Exception as exc:
        raise ConfigError(f"node meter {spec!r}: {exc}") from None
    url = text.partition("#")[0]

    def parse(body: object) -> responses.NodeReading:
        return responses.json_path(body, path)

    return HttpJsonSource("json", url, parse, JSON_UNCERTAINTY if unc is None else unc,
                          auth=auth, verify=verify)  # fmt: skip


def _hwmon(where: str, spec: str, sys_root: Path) -> NodeSource:
    from greenml.errors import SensorError
    from greenml.measure.sensors.hwmon import hwmon_chips

    if not where:
        raise ConfigError(f"node meter {spec!r}: name the hwmon chip (a path or its name)")
    if where.startswith("/"):
        chip = sys_root / where.lstrip("/") if sys_root != Path("/") else Path(where)
    else:
        found = [d for name, d in hwmon_chips(sys_root / "sys/class/hwmon") if name == where]
        if not found:
            raise ConfigError(f"node meter {spec!r}: no hwmon chip named {where!r}")
        chip = found[0]
    try:
        return HwmonNodeSource(chip)
    except SensorError as exc:
        raise ConfigError(f"node meter {spec!r}: {exc}") from None
