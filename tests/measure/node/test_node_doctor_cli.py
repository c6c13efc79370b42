"""``greenml doctor`` on the node meter (reached, not reached, none), and a bad ``--node-meter``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from greenml.cli import main
from greenml.cli.app import cli
from greenml.measure.doctor import Machine
from greenml.measure.node.doctor import probe_node_meter
from tests.measure.node.standins import Plug, serve


def test_doctor_says_none_is_configured_and_how_to_name_one() -> None:
    finding = probe_node_meter(Machine())
    assert finding.status == "absent" and "--node-meter" in finding.fix


def test_doctor_reaches_a_configured_plug_and_lists_it_as_a_run_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve(Plug(97.0), "shelly") as addr:
        monkeypatch.setenv("GREENML_NODE_METER", f"shelly://{addr}")
        result = CliRunner().invoke(cli, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    node = next(f for f in report["sensors"] if f["sensor"] == "node-meter")
    assert node["usable"] and "97.0 W now" in node["reason"]
    assert node["devices"][0]["component"] == "node"
    assert "node0" in [d["key"] for d in report["run"]["devices"]]


def test_doctor_says_why_a_configured_meter_is_not_reached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve(Plug(97.0), "json") as addr:
        monkeypatch.setenv("GREENML_NODE_METER", f"http://{addr}/elsewhere#$.w")
        finding = probe_node_meter(Machine())
    assert finding.status == "unsupported" and "HTTP 404" in finding.reason
    monkeypatch.setenv("GREENML_NODE_METER", "plug://nowhere")
    assert "give one of" in probe_node_meter(Machine()).reason


def test_a_bad_node_meter_option_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["run", "--node-meter", "snmp://public@pdu/not-an-oid", "--", "true"])
    err = capsys.readouterr().err
    assert code == 2 and "numeric OID" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
