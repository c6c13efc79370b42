"""Object-store-like locations through fsspec: memory:// round trips, unreachable stores."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator

import pytest

from greenml.errors import CheckpointError, ConfigError
from greenml.resilience.checkpointer import Checkpointer
from greenml.resilience.storage import FsspecStorage

fsspec = pytest.importorskip("fsspec")
torch = pytest.importorskip("torch")


@pytest.fixture
def url() -> Iterator[str]:
    root = f"greenml-test-{uuid.uuid4().hex[:8]}"
    yield f"memory://{root}/run"
    fs = fsspec.filesystem("memory")
    if fs.exists(f"/{root}"):
        fs.rm(f"/{root}", recursive=True)


def test_save_resume_and_retention_on_an_object_store(url: str) -> None:
    ckpt = Checkpointer(url, keep=2)
    assert isinstance(ckpt.storage, FsspecStorage)
    for step in (1, 2, 3):
        ckpt.save({"w": torch.full((3,), float(step))}, step=step, epoch=step // 2)
    fs = fsspec.filesystem("memory")
    root = url.removeprefix("memory://")
    names = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(root, detail=False))
    assert names == ["step-0000000002", "step-0000000003"]  # no probe object left behind
    loaded = Checkpointer(url).load_latest()
    assert loaded is not None and loaded.info.step == 3 and loaded.info.epoch == 1
    assert torch.equal(loaded.state["w"], torch.full((3,), 3.0))
    assert loaded.info.url == f"{url}/step-0000000003"


def test_a_wrong_checksum_on_the_store_is_skipped(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = Checkpointer(url)
    ckpt.save({"w": torch.ones(2)}, step=1)
    ckpt.save({"w": torch.zeros(2)}, step=2)
    fs = fsspec.filesystem("memory")
    path = f"{url.removeprefix('memory://')}/step-0000000002/manifest.json"
    doc = json.loads(fs.cat_file(path))
    doc["files"]["state.pt"]["sha256"] = "f" * 64
    fs.pipe_file(path, json.dumps(doc).encode())
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert "checksum mismatch" in caplog.text
    info = ckpt.latest()
    assert info is not None and ckpt.state_path(info) == f"{url}/step-0000000001/state.pt"


def test_an_unknown_protocol_is_a_config_error_at_construction() -> None:
    with pytest.raises(ConfigError, match="cannot open checkpoint location nosuchstore://"):
        Checkpointer("nosuchstore://bucket/run")


def test_an_unreachable_store_fails_at_construction_not_at_the_first_save() -> None:
    pytest.importorskip("aiohttp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(CheckpointError, match=r"is unreachable or not writable"):
        Checkpointer(f"http://127.0.0.1:{port}/checkpoints")
