"""An agent in this process, over a fake sysfs and fake GPUs (no users, no subprocess)."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from greenml.agent.config import AgentConfig
from greenml.agent.daemon import Agent, start_agent
from tests.agent.fake_node import NodeGpus
from tests.fakes.fake_pynvml import FakeClock
from tests.fakes.fake_sysfs import FakeMachine
from tests.optimize.fake_gpus import v100s


@dataclass
class LocalAgent:
    agent: Agent
    config: AgentConfig
    nvml: NodeGpus
    root: Path
    package: Path


def local_agent(tmp_path: Path, short: Path, **config: object) -> LocalAgent:
    machine = FakeMachine(tmp_path / "root", vendor="GenuineIntel")
    package = machine.rapl_zone("intel-rapl:0", "package-0", 1_000_000)
    machine.rapl_zone("intel-rapl:0/intel-rapl:0:0", "dram", 0)
    machine.rapl_zone("intel-rapl:1", "psys", 0)
    nvml = NodeGpus(v100s(2), FakeClock(0.0), privileged=True, state_path=tmp_path / "limits.json",
                    clock_path=tmp_path / "clocks.json")  # fmt: skip
    values: dict[str, object] = {
        "socket": short / "agent.sock", "state_dir": tmp_path / "state",
        "audit_log": tmp_path / "audit.jsonl", "sys_root": tmp_path / "root", **config,
    }  # fmt: skip
    settings = AgentConfig(**values)  # type: ignore[arg-type]
    agent = start_agent(settings, nvml=nvml, drop=False)
    return LocalAgent(agent, settings, nvml, tmp_path / "root", package)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A folder with a short path (a socket's path must fit in 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="gmla-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def served(
    tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalAgent]:
    """A local agent serving on its socket in a thread."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    local = local_agent(tmp_path, short_dir, requests_per_s=1e6)
    thread = threading.Thread(target=local.agent.serve, daemon=True)
    thread.start()
    yield local
    local.agent.stop()
    thread.join(timeout=10)
