"""Federated vs central: the link model, the FederatedMeter, the Flower mod, the advisor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from greenml.advise.comms import link, links
from greenml.advise.federated import FederatedMeter, FederatedRun, advise_federated
from greenml.cli import main
from greenml.errors import ConfigError
from greenml.integrations.flower import energy_mod
from greenml.measure.meter import Meter
from greenml.measure.sensors.fake import FakeDevice, FakeSensor


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def fake_meter(clock: Clock) -> Meter:
    # a 100 W "GPU" counter on a clock the test moves
    sensor = FakeSensor([FakeDevice("gpu0", [(0.0, 100.0)])], clock=clock)
    return Meter(sensors=[sensor], sample_hz=0, clock=clock, wall_clock=lambda: 1e9 + clock.t)


def test_link_figures_are_cited_and_custom_ones_accepted() -> None:
    assert {"fixed", "mobile", "4g", "5g"} <= set(links())
    assert link("mobile").j_per_byte == pytest.approx(0.14 * 3.6e6 / 1e9)
    assert link("lora=0.5").kwh_per_gb == 0.5 and link("lora=0.5").source == "given by the user"
    for bad in ("pigeon", "x=-1", "x=abc", "x=inf"):
        with pytest.raises(ConfigError):
            link(bad)


def simulated(tmp_path: Path, clients: int = 3, rounds: int = 2) -> Path:
    clock = Clock()
    fm = FederatedMeter(fake_meter(clock))
    weights = [np.zeros((10, 64)), np.zeros(10)]  # 5,200 bytes
    for c in range(clients):
        fm.data(str(c), [np.zeros((600, 64))])  # 307,200 bytes each
    for r in range(1, rounds + 1):
        for c in range(clients):
            with fm.client_round(str(c), r, received=weights) as sent:
                clock.t += 2.0  # 2 s at 100 W
                sent(weights)
        with fm.server(r):
            clock.t += 0.1
    with fm.central():
        clock.t += 2.0 * clients * rounds
    path = tmp_path / "fl.json"
    fm.run.write(path)
    return path


def test_meter_records_energy_and_bytes_per_client_round(tmp_path: Path) -> None:
    run = FederatedRun.load(simulated(tmp_path))
    assert run.round_numbers() == [1, 2] and run.clients() == ["0", "1", "2"]
    first = run.rounds[0]
    assert first.energy_j == pytest.approx(200.0) and first.method == "counter"
    assert first.bytes_down == first.bytes_up == 5200
    assert run.server_energy_j == pytest.approx(20.0)
    assert run.central_energy_j == pytest.approx(1200.0)


def test_the_advisor_compares_and_finds_the_break_even(tmp_path: Path) -> None:
    run = FederatedRun.load(simulated(tmp_path))
    mobile = advise_federated(run, link("mobile"))
    comm = 6 * 2 * 5200 * link("mobile").j_per_byte
    assert mobile.federated_j == pytest.approx(1200.0 + 20.0 + comm)
    assert mobile.central_j == pytest.approx(1200.0 + 3 * 307_200 * link("mobile").j_per_byte)
    # federated moves fewer bytes: it wins above the break-even link intensity
    even = mobile.break_even_kwh_per_gb
    assert even is not None
    high = advise_federated(run, link(f"x={even * 1.5}"))
    low = advise_federated(run, link(f"x={even / 1.5}"))
    assert high.federated_j < high.central_j and low.federated_j > low.central_j
    assert "federated is the cheaper on links above" in high.decision()


def test_a_run_without_rounds_is_one_config_error(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "empty.json"
    FederatedRun().write(path)
    with pytest.raises(ConfigError, match="no rounds"):
        FederatedRun.load(path)
    assert main(["advise", "federated", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no rounds" in err and err.count("\n") == 1


def test_cli_prints_a_decision(tmp_path: Path, capsys: Any) -> None:
    path = simulated(tmp_path)
    assert main(["advise", "federated", str(path), "--link", "4g"]) == 0
    out = capsys.readouterr().out
    assert "decision:" in out and "assumptions:" in out
    assert main(["advise", "federated", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["link"]["name"] == "fixed"


# --- the Flower mod, driven with objects shaped like Flower 1.42's Message and Context ---


class ArrayRecord(dict):  # type: ignore[type-arg]
    def count_bytes(self) -> int:  # as flwr.app.ArrayRecord: data bytes + key bytes
        return sum(len(v) + len(k) for k, v in self.items())


class Content:
    def __init__(self, arrays: dict[str, bytes], round: int | None) -> None:
        self.array_records = {"arrays": ArrayRecord(arrays)}
        self.config_records = {"config": {"server-round": round}} if round else {}


class Message:
    def __init__(self, arrays: dict[str, bytes], round: int | None = None) -> None:
        self.content = Content(arrays, round)
        self.metadata = type("Metadata", (), {"group_id": "7"})()

    def has_content(self) -> bool:
        return True


def test_the_flower_mod_measures_each_message() -> None:
    clock = Clock()
    fm = FederatedMeter(fake_meter(clock))
    mod = energy_mod(fm)
    context = type("Context", (), {"node_id": 42})()

    def train(msg: Message, ctx: Any) -> Message:
        clock.t += 1.0
        return Message({"w": b"\0" * 300})

    reply = mod(Message({"w": b"\0" * 1000}, round=3), context, train)
    assert isinstance(reply, Message)
    mod(Message({"w": b"\0" * 10}), context, train)  # no server-round: the group id
    first, second = fm.run.rounds
    assert (first.client, first.round, first.bytes_down, first.bytes_up) == ("42", 3, 1001, 301)
    assert first.energy_j == pytest.approx(100.0)
    assert second.round == 7


# --- anything read from outside: a record file, a --link value ---

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
round_fields = st.fixed_dictionaries({
    "round": json_values, "client": json_values, "energy_j": json_values,
    "uncertainty_rel": json_values, "method": json_values, "duration_s": json_values,
    "bytes_down": json_values, "bytes_up": json_values,
})  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    rounds=st.one_of(json_values, st.lists(round_fields, max_size=3)),
    data_bytes=st.one_of(json_values, st.dictionaries(st.text(max_size=3), json_values)),
)
def test_any_record_loads_or_is_one_config_error(rounds: Any, data_bytes: Any) -> None:
    doc = {"format": "greenml-federated/1", "rounds": rounds, "data_bytes": data_bytes}
    try:
        run = FederatedRun.from_dict(doc)
    except ConfigError:
        return
    assert run.rounds
    try:
        advice = advise_federated(run, link("fixed"))
    except ConfigError:
        return
    assert advice.rounds >= 1 and advice.federated_j >= 0


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=12))
def test_any_link_text_is_a_link_or_one_config_error(text: str) -> None:
    try:
        found = link(text)
    except ConfigError:
        return
    assert found.kwh_per_gb >= 0 and found.j_per_byte >= 0
