"""The agent in this process: reads, limits on size and rate, refusals, and a fuzz of the server."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.agent.audit import Peer
from greenml.agent.client import AgentClient
from greenml.agent.protocol import OPS
from greenml.agent.readers import NodeReader
from greenml.errors import AgentRefused
from tests.agent.conftest import LocalAgent, local_agent
from tests.fakes.fake_sysfs import FakeMachine


@pytest.fixture(scope="module")
def fuzz_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAgent]:
    """One agent for every example of the fuzz tests (serving on its socket)."""
    short = Path(tempfile.mkdtemp(prefix="gmla-"))
    local = local_agent(tmp_path_factory.mktemp("fuzz"), short, requests_per_s=1e6)
    thread = threading.Thread(target=local.agent.serve, daemon=True)
    thread.start()
    yield local
    local.agent.stop()
    thread.join(timeout=10)
    shutil.rmtree(short, ignore_errors=True)


CODES = {"bad-request", "version", "size", "rate", "policy", "unavailable", "internal"}
FIGURES = {"cases": 0, "answers": 0, "refusals": 0, "crashes": 0}
NOBODY = Peer(os.getpid(), 65534, 65534)


def _well_formed(answer: dict[str, object]) -> bool:
    if answer.get("v") != 1 or not isinstance(answer.get("ok"), bool):
        return False
    if answer["ok"]:
        return isinstance(answer.get("result"), dict)
    return answer.get("code") in CODES and isinstance(answer.get("refused"), str)


def test_reads_rapl_psys_and_gpus_as_joules_since_start(served: LocalAgent) -> None:
    with AgentClient(served.config.socket) as client:
        hello = client.request("hello")
        first = client.request("read")["energy_j"]
        (served.package / "energy_uj").write_text("3500000\n")  # +2.5 J
        second = client.request("read", components=["cpu"])["energy_j"]
    keys = {d["key"]: d["component"] for d in hello["devices"]}
    assert keys == {"cpu0": "cpu", "dram0": "dram", "psys0": "psys", "gpu0": "gpu",
                    "gpu1": "gpu"}  # fmt: skip
    assert set(first) == set(keys) and first["cpu0"] == 0.0
    assert second == {"cpu0": pytest.approx(2.5)}


def test_a_wrapping_counter_keeps_counting(tmp_path: Path) -> None:
    machine = FakeMachine(tmp_path, vendor="GenuineIntel")
    zone = machine.rapl_zone("intel-rapl:0", "package-0", 999_000, max_uj=1_000_000)
    psys = machine.rapl_zone("intel-rapl:1", "psys", 900_000, max_uj=1_000_000)
    reader = NodeReader(tmp_path, None)
    try:
        (zone / "energy_uj").write_text("500\n")  # wrapped: 1001 µJ to the top, then 500
        (psys / "energy_uj").write_text("100\n")
        energy = reader.energy_j()
    finally:
        reader.close()
    assert energy["cpu0"] == pytest.approx(1501e-6)
    assert energy["psys0"] == pytest.approx(100_101e-6)


def test_a_line_over_the_size_limit_is_refused_and_the_connection_closed(
    served: LocalAgent,
) -> None:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(served.config.socket))
        sock.sendall(b"{" + b" " * 5000 + b"}\n")
        answer = json.loads(sock.makefile("rb").readline())
        assert answer["code"] == "size" and "4096 bytes" in answer["refused"]
        assert sock.recv(10) == b""
    with AgentClient(served.config.socket) as client:  # the agent is still there
        assert client.request("hello")["protocol"] == 1


def test_requests_over_the_rate_are_refused(tmp_path: Path, short_dir: Path) -> None:
    local = local_agent(tmp_path, short_dir, requests_per_s=5.0)
    try:
        answers = [local.agent.server.respond(NOBODY, 1, b'{"v":1,"op":"hello"}')
                   for _ in range(8)]  # fmt: skip
    finally:
        local.agent.close()
    assert [a["ok"] for a in answers] == [True] * 5 + [False] * 3
    assert answers[-1]["code"] == "rate"


def test_a_user_without_a_job_token_is_refused_every_change(served: LocalAgent) -> None:
    server = served.agent.server
    line = b'{"v":1,"id":1,"op":"set_power_limit","args":{"gpu":0,"watts":150}}'
    answer = server.respond(NOBODY, 7, line)
    assert answer["ok"] is False and answer["code"] == "policy"
    assert "no job token" in str(answer["refused"])
    job = server.respond(NOBODY, 7, b'{"v":1,"op":"job_start","args":{"job":"9","uid":65534}}')
    assert "(root) only" in str(job["refused"])
    assert served.nvml._stored_limits() == {}  # nothing changed


def test_the_client_raises_the_agents_reason(served: LocalAgent) -> None:
    with (
        AgentClient(served.config.socket, token="not-a-token") as client,
        pytest.raises(AgentRefused, match="unknown job token"),
    ):
        client.request("set_power_limit", gpu=0, watts=150.0)


_values = st.none() | st.booleans() | st.integers(-5, 2**40) | st.floats() | st.text(max_size=20)
_names = ["gpu", "watts", "mhz", "why", "hold", "gpus", "job", "uid", "power", "components", "x"]
_args = st.dictionaries(st.sampled_from(_names),
                        _values | st.lists(st.integers(-1, 70), max_size=3), max_size=4)
_lines = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b" ")),
    st.builds(lambda op, args, token: json.dumps({"v": 1, "id": 1, "op": op, "args": args,
                                                  **({"token": token} if token else {})}).encode(),
              st.sampled_from([*OPS, "shell"]), _args, st.none() | st.text(max_size=40)),
)  # fmt: skip


@settings(max_examples=600)
@given(_lines)
def test_fuzz_the_server_answers_every_line_with_a_well_formed_answer(
    fuzz_agent: LocalAgent, line: bytes
) -> None:
    """Random bytes and random requests from a local user: never a crash, always an answer."""
    agent = fuzz_agent
    FIGURES["cases"] += 1
    try:
        answer = agent.agent.server.respond(NOBODY, 1, line)
    except Exception:  # pragma: no cover - what the fuzz test looks for
        FIGURES["crashes"] += 1
        raise
    assert _well_formed(answer), answer
    FIGURES["answers" if answer["ok"] else "refusals"] += 1
    if answer["ok"]:  # a local user without a token may only read
        assert json.loads(line)["op"] in ("hello", "read")


@settings(max_examples=150)
@given(st.lists(st.binary(min_size=1, max_size=200), min_size=1, max_size=5))
def test_fuzz_bytes_on_the_socket_never_take_the_agent_down(
    fuzz_agent: LocalAgent, lines: list[bytes]
) -> None:
    agent = fuzz_agent
    payload = b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(agent.config.socket))
        sock.sendall(payload)
        reader = sock.makefile("rb")
        for _ in lines:
            FIGURES["cases"] += 1
            answer = json.loads(reader.readline())
            assert _well_formed(answer)
            FIGURES["answers" if answer["ok"] else "refusals"] += 1


def test_zz_print_server_fuzz_figures() -> None:
    print(f"\nagent server fuzz: {FIGURES}")
    assert FIGURES["crashes"] == 0
    assert FIGURES["cases"] >= 600 or FIGURES["cases"] == 0  # (0: run alone)
