"""Saving, manifests, retention, and resuming past partial or corrupt checkpoints."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from greenml.errors import CheckpointError, ConfigError
from greenml.resilience.checkpointer import Checkpointer, step_directory
from greenml.resilience.manifest import Manifest

torch = pytest.importorskip("torch")


def _payload(value: float) -> dict[str, object]:
    return {"w": torch.full((4,), value), "step": int(value), "note": "plain values survive"}


def _dirs(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith("step-"))


def test_save_writes_state_then_a_manifest_with_its_checksum(tmp_path: Path) -> None:
    ckpt = Checkpointer(tmp_path)
    result = ckpt.save(_payload(1.0), step=10, epoch=2, extra={"policy": {"name": "fixed"}})
    assert result.step == 10 and not result.pending and result.blocking_s >= 0
    folder = tmp_path / step_directory(10)
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "state.pt"]
    manifest = Manifest.from_json((folder / "manifest.json").read_text())
    data = (folder / "state.pt").read_bytes()
    assert manifest.files["state.pt"].sha256 == hashlib.sha256(data).hexdigest()
    assert manifest.files["state.pt"].size_bytes == len(data)
    assert (manifest.step, manifest.epoch, manifest.reason) == (10, 2, "periodic")
    assert manifest.created_at.tzinfo is not None
    loaded = ckpt.load_latest()
    assert loaded is not None
    assert loaded.info.step == 10 and loaded.info.extra == {"policy": {"name": "fixed"}}
    assert torch.equal(loaded.state["w"], torch.full((4,), 1.0))
    assert loaded.state["note"] == "plain values survive"


def test_retention_keeps_the_newest_and_drops_older_partials(tmp_path: Path) -> None:
    (tmp_path / step_directory(1)).mkdir()  # a partial from a crash, older than what follows
    (tmp_path / step_directory(1) / ".state.pt.x.tmp").write_bytes(b"half")
    ckpt = Checkpointer(tmp_path, keep=2)
    for step in (2, 3, 4, 5):
        ckpt.save(_payload(step), step=step)
    assert _dirs(tmp_path) == [step_directory(4), step_directory(5)]


def test_no_checkpoint_yet_means_none(tmp_path: Path) -> None:
    assert Checkpointer(tmp_path).load_latest() is None
    assert Checkpointer(tmp_path).latest() is None


def test_partial_newest_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = Checkpointer(tmp_path)
    ckpt.save(_payload(1.0), step=1)
    ckpt.save(_payload(2.0), step=2)
    (tmp_path / step_directory(2) / "manifest.json").unlink()  # as if killed before the manifest
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert "step-0000000002: no manifest (an interrupted save)" in caplog.text


def test_wrong_checksum_is_skipped_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = Checkpointer(tmp_path)
    ckpt.save(_payload(1.0), step=1)
    ckpt.save(_payload(2.0), step=2)
    path = tmp_path / step_directory(2) / "manifest.json"
    doc = json.loads(path.read_text())
    doc["files"]["state.pt"]["sha256"] = "0" * 64
    path.write_text(json.dumps(doc))
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert torch.equal(loaded.state["w"], torch.full((4,), 1.0))
    assert "state.pt: checksum mismatch" in caplog.text
    assert ckpt.latest() is not None and ckpt.latest().step == 1  # type: ignore[union-attr]


def test_flipped_byte_truncation_and_garbage_manifest_are_all_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = Checkpointer(tmp_path, keep=5)
    for step in (1, 2, 3, 4):
        ckpt.save(_payload(step), step=step)
    flipped = tmp_path / step_directory(4) / "state.pt"
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    truncated = tmp_path / step_directory(3) / "state.pt"
    truncated.write_bytes(truncated.read_bytes()[:100])
    (tmp_path / step_directory(2) / "manifest.json").write_text("{not json")
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert "checksum mismatch" in caplog.text
    assert "100 bytes, the manifest says" in caplog.text
    assert "unreadable manifest" in caplog.text


def test_a_manifest_in_the_wrong_folder_is_not_trusted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ckpt = Checkpointer(tmp_path)
    ckpt.save(_payload(1.0), step=1)
    ckpt.save(_payload(7.0), step=7)
    (tmp_path / step_directory(7)).rename(tmp_path / step_directory(9))
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 1
    assert "step-0000000009: its manifest says step 7" in caplog.text


def test_resaving_a_step_replaces_it_whole(tmp_path: Path) -> None:
    ckpt = Checkpointer(tmp_path)
    ckpt.save(_payload(1.0), step=5)
    ckpt.save(_payload(9.0), step=5, reason="emergency")
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.reason == "emergency"
    assert torch.equal(loaded.state["w"], torch.full((4,), 9.0))


def test_an_unserializable_state_fails_clearly_and_keeps_the_previous(tmp_path: Path) -> None:
    ckpt = Checkpointer(tmp_path)
    ckpt.save(_payload(1.0), step=1)
    with pytest.raises(CheckpointError, match="cannot serialize the checkpoint state"):
        ckpt.save({"fn": lambda: None}, step=2)
    loaded = ckpt.load_latest()
    assert loaded is not None and loaded.info.step == 1


def test_bad_arguments() -> None:
    with pytest.raises(ConfigError, match="keep must be at least 1"):
        Checkpointer("/tmp/unused", keep=0)
    with pytest.raises(ConfigError, match="give the checkpoint location"):
        Checkpointer()
