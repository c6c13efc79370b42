"""Local atomic writes, clear write errors, and choosing the backend from the path."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import IO

import pytest

from greenml.errors import ConfigError
from greenml.resilience.storage import (
    CheckpointError,
    FsspecStorage,
    LocalStorage,
    open_storage,
    write_error,
)


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.write_atomic("step-1/state.pt", lambda f: f.write(b"first"))
    storage.write_atomic("step-1/state.pt", lambda f: f.write(b"second"))
    with storage.open_read("step-1/state.pt") as f:
        assert f.read() == b"second"
    assert storage.list_dir("step-1") == ["state.pt"]
    assert storage.list_dir() == ["step-1"]
    assert storage.exists("step-1/state.pt") and not storage.exists("step-1/other")


def test_a_failed_write_keeps_the_previous_file_and_cleans_up(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)
    storage.write_atomic("a/state.pt", lambda f: f.write(b"good"))

    def half_then_full_disk(f: IO[bytes]) -> None:
        f.write(b"partial bytes")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(CheckpointError) as error:
        storage.write_atomic("a/state.pt", half_then_full_disk)
    assert "no space left on the device" in str(error.value)
    assert "previous checkpoints are intact" in str(error.value)
    assert (tmp_path / "a" / "state.pt").read_bytes() == b"good"
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["state.pt"]


def test_a_writer_bug_propagates_and_leaves_no_temporary(tmp_path: Path) -> None:
    storage = LocalStorage(tmp_path)

    def broken(f: IO[bytes]) -> None:
        f.write(b"x")
        raise ValueError("not serializable")

    with pytest.raises(ValueError):
        storage.write_atomic("a/state.pt", broken)
    assert list((tmp_path / "a").iterdir()) == []


@pytest.mark.parametrize(
    ("code", "text"),
    [
        (errno.ENOSPC, "no space left on the device"),
        (errno.EFBIG, "file too large"),
        (errno.EDQUOT, "disk quota exceeded"),
        (errno.EROFS, "read-only filesystem"),
        (errno.EIO, "Input/output error"),
    ],
)
def test_write_errors_say_what_happened(code: int, text: str) -> None:
    error = write_error(OSError(code, __import__("os").strerror(code)), "/ckpt/step-1/state.pt")
    assert text in str(error)
    assert "/ckpt/step-1/state.pt" in str(error)


def test_an_unwritable_location_fails_at_construction(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(CheckpointError, match="cannot be written"):
        LocalStorage(blocker / "checkpoints")


def test_open_storage_picks_the_backend(tmp_path: Path) -> None:
    assert isinstance(open_storage(tmp_path / "x"), LocalStorage)
    local = open_storage(f"file://{tmp_path / 'y'}")
    assert isinstance(local, LocalStorage) and local.url == str(tmp_path / "y")
    pytest.importorskip("fsspec")
    assert isinstance(open_storage("memory://greenml-test-open/run"), FsspecStorage)
    with pytest.raises(ConfigError, match="cannot open checkpoint location"):
        open_storage("nosuchprotocol://bucket/run")
