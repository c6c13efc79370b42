"""A metered PDU outlet over SNMP (v2c): one OID's value, times a scale, in watts.

PDUs give an outlet's active power under their own MIB, often in tenths of a
watt (``scale=0.1``): e.g. APC PowerNet ``rPDU2OutletMeteredStatusPower``
(1.3.6.1.4.1.318.1.1.26.9.4.3.1.7.N, W), Raritan PDU2 ``measurementsOutletSensorValue``
(with its own decimal digits). The user names the OID; greenml reads it with pysnmp.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from greenml.errors import SensorError
from greenml.measure.node.responses import NodeReading
from greenml.measure.node.sources import PDU_UNCERTAINTY, TIMEOUT_S, NodeSource


def snmp_watts(value: Any, scale: float) -> float:
    """An SNMP value (Integer, Gauge32, an OctetString of digits) × ``scale`` as watts."""
    try:
        number = float(str(value) if not isinstance(value, int | float) else value)
    except ValueError:
        raise SensorError(f"the PDU's value is not a number: {str(value)[:40]!r}") from None
    watts = number * scale
    if not math.isfinite(watts) or watts < 0:
        raise SensorError(f"the PDU's value is not a power: {watts!r}")
    return watts


class SnmpSource(NodeSource):
    """One OID of an SNMP agent, read with SNMP v2c GET."""

    kind = "snmp"
    uncertainty_rel = PDU_UNCERTAINTY

    def __init__(self, host: str, port: int, oid: str, community: str = "public",
                 scale: float = 1.0, uncertainty_rel: float | None = None) -> None:  # fmt: skip
        super().__init__(f"{host}:{port} {oid}", uncertainty_rel)
        self.host, self.port, self.oid = host, port, oid.lstrip(".")
        self.community = community
        self.scale = scale

    def read(self) -> NodeReading:
        try:
            value = asyncio.run(self._get())
        except SensorError:
            raise
        except Exception as exc:  # pysnmp raises many kinds; one line says which
            raise SensorError(f"SNMP {self.where}: {type(exc).__name__}: {exc}") from None
        return NodeReading(snmp_watts(value, self.scale))

    async def _get(self) -> Any:
        try:
            from pysnmp.hlapi.v3arch.asyncio import (
                CommunityData,
                ContextData,
                ObjectIdentity,
                ObjectType,
                SnmpEngine,
                UdpTransportTarget,
                get_cmd,
            )
        except ImportError as exc:  # pragma: no cover - an optional extra
            raise SensorError("an SNMP node meter needs pysnmp: pip install 'greenml[node]'") from (
                exc
            )
        engine = SnmpEngine()
        try:
            target = await UdpTransportTarget.create((self.host, self.port), timeout=TIMEOUT_S / 2,
                                                     retries=1)  # fmt: skip
            error, status, _index, binds = await get_cmd(
                engine, CommunityData(self.community, mpModel=1), target, ContextData(),
                ObjectType(ObjectIdentity(self.oid)),
            )  # fmt: skip
        finally:
            engine.close_dispatcher()
        if error:
            raise SensorError(f"SNMP {self.where}: {error}")
        if status:
            raise SensorError(f"SNMP {self.where}: {status.prettyPrint()}")
        value = binds[0][1]
        if type(value).__name__ in ("NoSuchObject", "NoSuchInstance", "EndOfMibView"):
            raise SensorError(f"SNMP {self.where}: no such object")
        return value
