"""The manifest that marks a checkpoint complete: one JSON file, written last.

``manifest.json`` lists every file of the checkpoint with its size and SHA-256.
A checkpoint directory without a manifest is partial (a save was interrupted);
one whose files do not match their manifest is corrupt. Either is skipped on
resume, with a warning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import IO, Any

from greenml.errors import ManifestError
from greenml.resilience.storage import Storage, read_chunks

MANIFEST_NAME = "manifest.json"
FORMAT = "greenml-checkpoint/1"


@dataclass(frozen=True)
class FileEntry:
    """One file of a checkpoint: its size and SHA-256 (hex)."""

    sha256: str
    size_bytes: int


@dataclass(frozen=True)
class Manifest:
    """What a complete checkpoint holds.

    Attributes:
        step: Training steps completed when it was taken.
        epoch: The epoch at that step.
        created_at: When it was sealed (UTC).
        files: File name (relative to the checkpoint directory) → size and hash.
        reason: ``periodic``, ``emergency`` (signal or notice) or ``final``.
        extra: Small JSON facts kept beside the state (e.g. the interval policy's estimates).
    """

    step: int
    epoch: int
    created_at: datetime
    files: dict[str, FileEntry]
    reason: str = "periodic"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def size_bytes(self) -> int:
        """Total size of the checkpoint's files."""
        return sum(entry.size_bytes for entry in self.files.values())

    def to_json(self) -> str:
        """The manifest as indented JSON."""
        doc = {
            "format": FORMAT,
            "step": self.step,
            "epoch": self.epoch,
            "created_at": self.created_at.astimezone(timezone.utc).isoformat(),
            "reason": self.reason,
            "files": {
                name: {"sha256": e.sha256, "size_bytes": e.size_bytes}
                for name, e in sorted(self.files.items())
            },
            "extra": self.extra,
        }
        return json.dumps(doc, indent=2, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse a manifest.

        Raises:
            ManifestError: Not JSON, another format, or a field missing.
        """
        try:
            doc = json.loads(text)
            if doc.get("format") != FORMAT:
                raise ManifestError(f"unknown manifest format {doc.get('format')!r}")
            files = {
                str(name): FileEntry(str(e["sha256"]), int(e["size_bytes"]))
                for name, e in doc["files"].items()
            }
            return cls(
                step=int(doc["step"]),
                epoch=int(doc["epoch"]),
                created_at=datetime.fromisoformat(doc["created_at"]),
                files=files,
                reason=str(doc.get("reason", "periodic")),
                extra=dict(doc.get("extra") or {}),
            )
        except ManifestError:
            raise
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ManifestError(f"unreadable manifest: {type(exc).__name__}: {exc}") from exc


class HashingWriter:
    """A write-only file wrapper that hashes and counts what passes through.

    It keeps the first ``OSError`` of the underlying file, because serializers
    written in C++ (``torch.save``) may re-raise it as another type.
    """

    def __init__(self, f: IO[bytes]) -> None:
        self._f = f
        self._hash = hashlib.sha256()
        self.size_bytes = 0
        self.error: OSError | None = None

    def write(self, data: bytes | bytearray | memoryview) -> int:
        try:
            written = self._f.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise
        self._hash.update(data)
        self.size_bytes += len(data)
        return written if written is not None else len(data)

    def flush(self) -> None:
        try:
            self._f.flush()
        except OSError as exc:
            self.error = self.error or exc
            raise

    @property
    def entry(self) -> FileEntry:
        """The hash and size of everything written so far."""
        return FileEntry(self._hash.hexdigest(), self.size_bytes)


def hash_file(storage: Storage, name: str) -> FileEntry:
    """SHA-256 and size of one stored file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with storage.open_read(name) as f:
        for chunk in read_chunks(f):
            digest.update(chunk)
            size += len(chunk)
    return FileEntry(digest.hexdigest(), size)


def write_manifest(storage: Storage, directory: str, manifest: Manifest) -> None:
    """Write ``manifest.json`` atomically; call it after every file is in place."""
    data = manifest.to_json().encode("utf-8")

    def write(f: IO[bytes]) -> None:
        f.write(data)

    storage.write_atomic(f"{directory}/{MANIFEST_NAME}", write)


def read_manifest(storage: Storage, directory: str) -> Manifest:
    """The manifest of a checkpoint directory.

    Raises:
        ManifestError: There is none (a partial checkpoint) or it cannot be parsed.
    """
    name = f"{directory}/{MANIFEST_NAME}"
    if not storage.exists(name):
        raise ManifestError("no manifest (an interrupted save)")
    with storage.open_read(name) as f:
        text = f.read().decode("utf-8", errors="replace")
    return Manifest.from_json(text)


def check_entry(name: str, expected: FileEntry, actual: FileEntry) -> str | None:
    """A one-line problem when a file does not match its manifest entry, else None."""
    if actual.size_bytes != expected.size_bytes:
        return f"{name}: {actual.size_bytes} bytes, the manifest says {expected.size_bytes}"
    if actual.sha256 != expected.sha256:
        return (
            f"{name}: checksum mismatch "
            f"(sha256 {actual.sha256[:12]}…, manifest {expected.sha256[:12]}…)"
        )
    return None


def verify(storage: Storage, directory: str, manifest: Manifest) -> list[str]:
    """Problems found by re-hashing every file the manifest lists (empty: valid)."""
    problems = []
    for name, expected in sorted(manifest.files.items()):
        path = f"{directory}/{name}"
        if not storage.exists(path):
            problems.append(f"{name}: missing")
            continue
        problem = check_entry(name, expected, hash_file(storage, path))
        if problem:
            problems.append(problem)
    return problems


def verified(storage: Storage, directory: str, manifest: Manifest | None = None) -> Manifest:
    """The checkpoint's manifest (read when not given), once every file it lists matched it.

    Raises:
        ManifestError: No manifest, an unreadable one, or files that do not match it.
    """
    if manifest is None:
        manifest = read_manifest(storage, directory)
    problems = verify(storage, directory, manifest)
    if problems:
        raise ManifestError("; ".join(problems))
    return manifest


def seal(
    storage: Storage,
    directory: str,
    files: Iterable[str],
    *,
    step: int,
    epoch: int = 0,
    reason: str = "periodic",
    extra: dict[str, Any] | None = None,
) -> Manifest:
    """Hash files already written in ``directory`` and write their manifest last."""
    entries = {name: hash_file(storage, f"{directory}/{name}") for name in files}
    manifest = Manifest(
        step=step,
        epoch=epoch,
        created_at=datetime.now(timezone.utc),
        files=entries,
        reason=reason,
        extra=dict(extra or {}),
    )
    write_manifest(storage, directory, manifest)
    return manifest


def read_all(f: IO[bytes]) -> bytes:
    """Read a whole file (used to hash and deserialize one buffer)."""
    return b"".join(read_chunks(f))
