"""A metered PDU outlet read over SNMP v2c from snmpsim (a .snmprec the test writes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import SensorError
from greenml.measure.node.snmp import snmp_watts
from greenml.measure.node.spec import parse_node_meter
from tests.measure.node.servers import snmpsim

# APC PowerNet-MIB rPDU2OutletMeteredStatusPower, outlet 3 (watts); 2: Integer, 66: Gauge32
APC_OUTLET = "1.3.6.1.4.1.318.1.1.26.9.4.3.1.7.3"
RECORDS = (
    "1.3.6.1.2.1.1.1.0|4|APC Rack PDU\n"
    f"{APC_OUTLET}|2|287\n"
    "1.3.6.1.4.1.13742.6.5.4.3.1.4.1.2.5|66|4125\n"  # a Raritan-like value in tenths of a watt
)


def test_the_outlet_is_read_scaled_and_a_missing_oid_is_one_line(tmp_path: Path) -> None:
    with snmpsim(tmp_path, {"public": RECORDS}) as port:
        base = f"snmp://public@127.0.0.1:{port}"
        assert parse_node_meter(f"{base}/{APC_OUTLET}").read().power_w == 287
        tenths = parse_node_meter(f"{base}/1.3.6.1.4.1.13742.6.5.4.3.1.4.1.2.5?scale=0.1")
        assert tenths.read().power_w == pytest.approx(412.5)
        with pytest.raises(SensorError, match="no such object"):
            parse_node_meter(f"{base}/{APC_OUTLET[:-1]}9").read()


@given(st.one_of(st.integers(), st.floats(), st.text(max_size=12)),
       st.floats(min_value=0, max_value=100))  # fmt: skip
def test_any_snmp_value_is_watts_or_one_sensor_error(value: object, scale: float) -> None:
    try:
        watts = snmp_watts(value, scale)
    except SensorError as exc:
        assert "\n" not in str(exc)
        return
    assert watts >= 0 and watts != float("inf")
