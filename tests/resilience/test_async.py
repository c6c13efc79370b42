"""Asynchronous checkpoints: snapshot in the caller, write in the background, lose no error."""

from __future__ import annotations

import errno
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import IO

import pytest

from greenml.errors import CheckpointError
from greenml.resilience.checkpointer import Checkpointer
from greenml.resilience.serialize import snapshot
from greenml.resilience.storage import LocalStorage, Writer

torch = pytest.importorskip("torch")


class GatedStorage(LocalStorage):
    """Local storage whose state-file writes wait for a gate, counting concurrent writers."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.gate = threading.Event()
        self.started: list[str] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()

    def write_atomic(self, name: str, write: Writer) -> None:
        if not name.endswith("state.pt"):
            super().write_atomic(name, write)
            return
        with self._lock:
            self.started.append(name.split("/")[0])
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            assert self.gate.wait(timeout=30), "gate never opened"
            super().write_atomic(name, write)
        finally:
            with self._lock:
                self.active -= 1


class FullDiskStorage(LocalStorage):
    """Local storage on a disk that fills up after a few bytes."""

    def write_atomic(self, name: str, write: Writer) -> None:
        def write_until_full(f: IO[bytes]) -> None:
            class Full:
                def write(self, data: bytes) -> int:
                    raise OSError(errno.ENOSPC, "No space left on device")

                def flush(self) -> None:
                    pass

            write(Full())  # type: ignore[arg-type]

        super().write_atomic(name, write_until_full if name.endswith("state.pt") else write)


def test_save_returns_after_the_snapshot_and_later_changes_do_not_leak_in(tmp_path: Path) -> None:
    storage = GatedStorage(tmp_path)
    ckpt = Checkpointer(storage=storage, async_mode=True)
    weights = torch.zeros(1000)
    result = ckpt.save({"w": weights, "meta": {"lr": [0.1]}}, step=1)
    assert result.pending  # returned while the writer is still held at the gate
    assert not (tmp_path / "step-0000000001" / "manifest.json").exists()
    weights += 1.0  # the training loop moves on
    storage.gate.set()
    ckpt.wait()
    loaded = Checkpointer(tmp_path).load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert torch.equal(loaded.state["w"], torch.zeros(1000))
    assert loaded.state["meta"] == {"lr": [0.1]}


def test_at_most_one_save_is_in_flight(tmp_path: Path) -> None:
    storage = GatedStorage(tmp_path)
    ckpt = Checkpointer(storage=storage, async_mode=True, keep=5)
    ckpt.save({"w": torch.ones(3)}, step=1)
    second = threading.Thread(
        target=ckpt.save, args=({"w": torch.ones(3) * 2},), kwargs={"step": 2}
    )
    second.start()
    deadline = time.monotonic() + 0.3
    while time.monotonic() < deadline and len(storage.started) < 2:
        time.sleep(0.01)
    assert storage.started == ["step-0000000001"], "the second save started before the first ended"
    storage.gate.set()
    second.join(timeout=30)
    ckpt.save({"w": torch.ones(3) * 3}, step=3)
    ckpt.close()
    assert storage.started == ["step-0000000001", "step-0000000002", "step-0000000003"]
    assert storage.max_active == 1
    loaded = ckpt.load_latest()
    assert loaded is not None and torch.equal(loaded.state["w"], torch.ones(3) * 3)


def test_a_failed_background_save_is_logged_and_raised_at_the_next_save(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = Checkpointer(tmp_path, async_mode=True)
    ckpt.save({"w": torch.ones(2)}, step=1)
    ckpt.wait()
    failing = Checkpointer(storage=FullDiskStorage(tmp_path), async_mode=True)
    failing.save({"w": torch.ones(2)}, step=2)  # fails in the background
    with pytest.raises(CheckpointError) as error:
        failing.save({"w": torch.ones(2)}, step=3)
    message = str(error.value)
    assert "background save of step 2 failed" in message
    assert "no space left on the device" in message
    assert "background checkpoint of step 2 failed" in caplog.text
    failing.wait()  # step 3 was not started: nothing more to report
    loaded = Checkpointer(tmp_path).load_latest()
    assert loaded is not None and loaded.info.step == 1


def test_close_raises_the_error_of_the_last_background_save(tmp_path: Path) -> None:
    failing = Checkpointer(storage=FullDiskStorage(tmp_path), async_mode=True)
    failing.save({"w": torch.ones(2)}, step=1)
    with pytest.raises(CheckpointError, match="background save of step 1 failed"):
        failing.close()


def test_the_context_manager_does_not_hide_the_body_exception(tmp_path: Path) -> None:
    with pytest.raises(KeyError), Checkpointer(
        storage=FullDiskStorage(tmp_path), async_mode=True
    ) as failing:
        failing.save({"w": torch.ones(2)}, step=1)
        raise KeyError("the body's own error")


def test_load_latest_waits_for_the_save_in_flight(tmp_path: Path) -> None:
    storage = GatedStorage(tmp_path)
    ckpt = Checkpointer(storage=storage, async_mode=True)
    ckpt.save({"w": torch.ones(2)}, step=4)
    threading.Timer(0.05, storage.gate.set).start()
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 4


def test_snapshot_copies_tensors_and_keeps_the_structure() -> None:
    inner = torch.arange(4.0)
    state = {"model": OrderedDict(w=inner), "pairs": [(1, inner)], "n": 3, "cfg": {"a": [1, 2]}}
    copied = snapshot(state)
    assert isinstance(copied["model"], OrderedDict)
    assert isinstance(copied["pairs"][0], tuple)
    assert copied["model"]["w"].data_ptr() != inner.data_ptr()
    inner.zero_()
    assert torch.equal(copied["model"]["w"], torch.arange(4.0))
    assert copied["cfg"] == {"a": [1, 2]} and copied["cfg"] is not state["cfg"]
