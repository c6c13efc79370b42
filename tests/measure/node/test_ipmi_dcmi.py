"""Debian's ipmitool (``dcmi power reading`` over lanplus) against an IPMI 2.0 BMC.

OpenIPMI's ``ipmi_sim`` and PyPI's ``ipmisim`` implement no DCMI command, so the
BMC is pyghmi's RMCP+ server with the DCMI Get Power Reading answer added
(``dcmi_bmc.py``): the client, the session and the wire protocol are theirs.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from greenml.errors import SensorError
from greenml.measure.node.sensor import NodeSensor
from greenml.measure.node.spec import parse_node_meter
from tests.measure.node.servers import free_port, tool

BMC = Path(__file__).with_name("dcmi_bmc.py")


@pytest.fixture(scope="module")
def bmc_port() -> Iterator[int]:
    tool("ipmitool")
    pytest.importorskip("pyghmi")
    port = free_port(__import__("socket").SOCK_DGRAM)
    proc = subprocess.Popen([sys.executable, str(BMC), str(port), "212"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        source = parse_node_meter(f"ipmi://admin:password@127.0.0.1:{port}")
        while True:
            try:
                source.read()
                break
            except SensorError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.5)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_ipmitool_reads_the_bmcs_instantaneous_power(bmc_port: int) -> None:
    sensor = NodeSensor(parse_node_meter(f"ipmi://admin:password@127.0.0.1:{bmc_port}"),
                        poll=False)  # fmt: skip
    try:
        assert sensor.error is None
        assert sensor.read_power_w() == {"node0": 212.0}
        assert sensor.devices[0].name == "node (ipmi)" and sensor.devices[0].uncertainty_rel == 0.05
    finally:
        sensor.close()


def test_a_wrong_password_is_one_line_from_ipmitool(bmc_port: int) -> None:
    source = parse_node_meter(f"ipmi://admin:nope@127.0.0.1:{bmc_port}")
    with pytest.raises(SensorError, match="ipmitool") as info:
        source.read()
    assert "\n" not in str(info.value)
