"""The node-meter parsers on the formats as their docs give them, and on bodies of any shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.errors import SensorError
from greenml.measure.node import responses

MOCKUP = Path(__file__).parent / "fixtures" / "redfish-public-rackmount1"

# Shelly Gen2 API docs, Switch.GetStatus example (shelly-api-docs.shelly.cloud, Switch component)
SHELLY = {
    "id": 0, "source": "init", "output": True, "apower": 85.3, "voltage": 227.5,
    "current": 0.401, "aenergy": {"total": 1234.567, "by_minute": [1425.8, 1420.3, 1422.6],
                                  "minute_ts": 1654511972},
    "temperature": {"tC": 49.6, "tF": 121.3},
}  # fmt: skip
# Tasmota docs, Commands → Status 8 answer (tasmota.github.io/docs/Commands)
TASMOTA = {"StatusSNS": {"Time": "2019-12-25T15:07:32", "ENERGY": {
    "TotalStartTime": "2019-12-25T13:34:36", "Total": 0.003, "Yesterday": 0.000, "Today": 0.003,
    "Power": 7, "ApparentPower": 9, "ReactivePower": 6, "Factor": 0.77, "Voltage": 230,
    "Current": 0.040}}}  # fmt: skip
# ipmitool(1) 1.8.19, `dcmi power reading` as it prints it
DCMI = """
    Instantaneous power reading:                   216 Watts
    Minimum during sampling period:                 90 Watts
    Maximum during sampling period:                305 Watts
    Average power reading over sample period:      201 Watts
    IPMI timestamp:                           Sat Nov 28 12:00:00 2026
    Sampling period:                          00000001 Seconds.
    Power reading state is:                   activated
"""


def test_the_dmtf_mockups_power_and_environment_metrics() -> None:
    power = json.loads((MOCKUP / "Chassis/1U/Power/index.json").read_text())
    env = json.loads((MOCKUP / "Chassis/1U/EnvironmentMetrics/index.json").read_text())
    assert responses.redfish_power(power).power_w == 344
    assert responses.redfish_environment(env).power_w == 374


def test_shelly_tasmota_and_dcmi_as_documented() -> None:
    shelly = responses.shelly_switch(SHELLY)
    assert shelly.power_w == 85.3 and shelly.energy_j == pytest.approx(1234.567 * 3600)
    tasmota = responses.tasmota_status8(TASMOTA)
    assert tasmota.power_w == 7 and tasmota.energy_j == pytest.approx(0.003 * 3.6e6)
    assert responses.dcmi_power(DCMI).power_w == 216  # the instantaneous, not the average


def test_a_deactivated_dcmi_reading_and_a_switch_without_metering_say_so() -> None:
    with pytest.raises(SensorError, match="deactivated"):
        responses.dcmi_power(DCMI.replace("activated", "deactivated"))
    with pytest.raises(SensorError, match="apower"):
        responses.shelly_switch({"id": 0, "output": True})


def test_json_path_selects_exactly_one_number() -> None:
    body = {"psu": [{"watts": 120.5}, {"watts": 99}]}
    assert responses.json_path(body, "$.psu[0].watts").power_w == 120.5
    with pytest.raises(SensorError, match="selects 2 values"):
        responses.json_path(body, "$.psu[*].watts")
    with pytest.raises(SensorError, match="not a JSONPath"):
        responses.compile_path("$.[[[")


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(["PowerControl", "PowerConsumedWatts", "PowerWatts",
                                       "Reading", "apower", "aenergy", "total", "StatusSNS",
                                       "ENERGY", "Power", "Total", "x"]), children, max_size=4),
    max_leaves=12,
)  # fmt: skip
PARSERS = [responses.redfish_power, responses.redfish_environment, responses.shelly_switch,
           responses.tasmota_status8]  # fmt: skip


@given(json_values, st.sampled_from(PARSERS))
def test_any_body_gives_a_finite_non_negative_reading_or_one_sensor_error(
    body: Any, parse: Any
) -> None:
    try:
        reading = parse(body)
    except SensorError as exc:
        assert "\n" not in str(exc)
        return
    assert reading.power_w >= 0 and reading.power_w != float("inf")
    assert reading.energy_j is None or reading.energy_j >= 0


@given(st.text(max_size=200))
def test_any_ipmitool_output_is_a_reading_or_one_sensor_error(text: str) -> None:
    try:
        assert responses.dcmi_power(text).power_w >= 0
    except SensorError as exc:
        assert "\n" not in str(exc)


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_the_watts_a_plug_reports_are_the_watts_read(watts: float) -> None:
    assert responses.shelly_switch({**SHELLY, "apower": watts}).power_w == watts
    body = {"StatusSNS": {"ENERGY": {"Power": watts}}}
    assert responses.tasmota_status8(body).power_w == watts
