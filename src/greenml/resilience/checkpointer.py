"""Atomic checkpoints with a manifest, retention, resume, and an asynchronous mode.

Layout under the checkpointer's root::

    step-0000000120/state.pt        torch.save of the payload
    step-0000000120/manifest.json   sizes and SHA-256 of the files, written last

``load_latest`` walks the checkpoints newest first and returns the first whose
files match its manifest; partial ones (no manifest) and corrupt ones (a
checksum that does not match) are skipped with a warning.

In asynchronous mode (the CheckFreq idea) ``save`` copies every tensor to CPU
memory in the caller — the only time the training loop is blocked — and a
background thread serializes and writes the copy. At most one save is in
flight: the next ``save`` waits for it. A failed background save is logged at
once and raised by the next ``save``, ``wait`` or ``close``; it is never lost.

Lazy imports: torch (~1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from types import TracebackType
from typing import Any, TypeVar

from greenml.errors import CheckpointError, ConfigError, ManifestError
from greenml.resilience.manifest import (
    MANIFEST_NAME,
    FileEntry,
    Manifest,
    check_entry,
    read_all,
    read_manifest,
    verified,
    write_manifest,
)
from greenml.resilience.serialize import snapshot, torch_writer
from greenml.resilience.storage import Storage, open_storage

log = logging.getLogger("greenml")

STATE_FILE = "state.pt"
_STEP_DIR = re.compile(r"^step-(\d+)$")

T = TypeVar("T")


def step_directory(step: int) -> str:
    """The directory name of the checkpoint taken after ``step`` steps."""
    return f"step-{step:010d}"


@dataclass(frozen=True)
class CheckpointInfo:
    """A complete checkpoint, as its manifest describes it."""

    directory: str
    url: str
    step: int
    epoch: int
    created_at: datetime
    reason: str
    size_bytes: int
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, storage: Storage, directory: str, manifest: Manifest) -> CheckpointInfo:
        return cls(
            directory=directory,
            url=storage.local_path(directory),
            step=manifest.step,
            epoch=manifest.epoch,
            created_at=manifest.created_at,
            reason=manifest.reason,
            size_bytes=manifest.size_bytes,
            extra=manifest.extra,
        )


@dataclass(frozen=True)
class Loaded:
    """A checkpoint read back: what it is, and the payload that was saved."""

    info: CheckpointInfo
    state: dict[str, Any]


@dataclass(frozen=True)
class SaveResult:
    """What one ``save`` cost the caller.

    Attributes:
        step: The step saved.
        blocking_s: Seconds the caller was blocked (the whole save, or the snapshot).
        pending: True while an asynchronous save is still being written.
    """

    step: int
    blocking_s: float
    pending: bool


class Checkpointer:
    """Save training state atomically under one location and resume from the newest.

    Args:
        path: A directory, or an fsspec URL (``s3://bucket/run``) when fsspec is installed.
        keep: How many complete checkpoints to keep (older ones are deleted).
        async_mode: Snapshot in the caller, write on a background thread.
        storage: A ready :class:`~greenml.resilience.storage.Storage` instead of ``path``.

    Raises:
        ConfigError: ``keep`` < 1, or an unknown URL scheme.
        CheckpointError: The location cannot be reached or written (checked now).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        keep: int = 3,
        async_mode: bool = False,
        *,
        storage: Storage | None = None,
    ) -> None:
        if keep < 1:
            raise ConfigError(f"keep must be at least 1 checkpoint, not {keep}")
        if storage is None:
            if path is None:
                raise ConfigError("give the checkpoint location (a directory or a URL)")
            storage = open_storage(path)
        self.storage = storage
        self.keep = keep
        self.async_mode = async_mode
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._error_step: int | None = None

    @property
    def url(self) -> str:
        """Where the checkpoints live."""
        return self.storage.url

    def save(
        self,
        state: Mapping[str, Any],
        *,
        step: int,
        epoch: int = 0,
        reason: str = "periodic",
        extra: dict[str, Any] | None = None,
    ) -> SaveResult:
        """Save ``state`` (tensors and plain values) as the checkpoint of ``step``.

        Raises:
            CheckpointError: This save, or the previous background one, failed.
        """
        started = time.perf_counter()
        self.wait()
        if self.async_mode:
            copied = snapshot(state)
            thread = threading.Thread(
                target=self._persist_in_background,
                args=(copied, step, epoch, reason, dict(extra or {})),
                name=f"greenml-checkpoint-{step}",
            )
            self._thread = thread
            thread.start()
        else:
            self._persist(state, step, epoch, reason, dict(extra or {}))
        return SaveResult(step, time.perf_counter() - started, pending=self.async_mode)

    def wait(self) -> None:
        """Wait for the background save in flight; raise its error if it failed."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise CheckpointError(
                f"the background save of step {self._error_step} failed: {error}"
            ) from error

    def close(self) -> None:
        """Finish any background save (raising its error)."""
        self.wait()

    def __enter__(self) -> Checkpointer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
            return
        try:
            self.close()
        except CheckpointError as error:  # do not hide the exception already on its way
            log.error("%s", error)

    def load_latest(self, *, weights_only: bool = True) -> Loaded | None:
        """The newest checkpoint whose files match its manifest, read into CPU memory.

        Partial and corrupt checkpoints are skipped with a warning.

        Raises:
            CheckpointError: A valid checkpoint that torch cannot deserialize.
        """
        import torch

        self.wait()
        found = first_valid(self.storage, self._directories_newest_first(), self._read_state)
        if found is None:
            return None
        directory, (manifest, data) = found
        try:
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=weights_only)
        except Exception as exc:  # torch raises several types for one cause
            safe = " (only tensors and plain Python values)" if weights_only else ""
            raise CheckpointError(
                f"checkpoint {self.storage.local_path(directory)} matches its manifest "
                f"but torch.load(weights_only={weights_only}){safe} cannot read it: "
                f"{' '.join(str(exc).split())[:300]}"
            ) from exc
        return Loaded(CheckpointInfo.of(self.storage, directory, manifest), state)

    def latest(self) -> CheckpointInfo | None:
        """The newest checkpoint whose files match its manifest (each file re-hashed)."""
        self.wait()
        found = first_valid(
            self.storage,
            self._directories_newest_first(),
            lambda directory: verified(self.storage, directory, self._manifest(directory)),
        )
        return None if found is None else CheckpointInfo.of(self.storage, *found)

    def state_path(self, info: CheckpointInfo) -> str:
        """The path or URL of a checkpoint's state file."""
        return self.storage.local_path(f"{info.directory}/{STATE_FILE}")

    # -- internals ---------------------------------------------------------------

    def _persist_in_background(
        self, state: Mapping[str, Any], step: int, epoch: int, reason: str, extra: dict[str, Any]
    ) -> None:
        try:
            self._persist(state, step, epoch, reason, extra)
        except BaseException as exc:  # kept for the caller; logged now so it is never lost
            self._error, self._error_step = exc, step
            log.error("background checkpoint of step %d failed: %s", step, exc)

    def _persist(
        self, state: Mapping[str, Any], step: int, epoch: int, reason: str, extra: dict[str, Any]
    ) -> None:
        directory = step_directory(step)
        self.storage.remove(f"{directory}/{MANIFEST_NAME}")  # re-saving a step: invalid until done
        entries: dict[str, FileEntry] = {}
        self.storage.write_atomic(
            f"{directory}/{STATE_FILE}", torch_writer(state, entries, STATE_FILE)
        )
        manifest = Manifest(
            step=step,
            epoch=epoch,
            created_at=datetime.now(timezone.utc),
            files=entries,
            reason=reason,
            extra=extra,
        )
        write_manifest(self.storage, directory, manifest)
        self._retain()

    def _read_state(self, directory: str) -> tuple[Manifest, bytes]:
        """The manifest and the state file's bytes, once they match it."""
        manifest = self._manifest(directory)
        entry = manifest.files.get(STATE_FILE)
        if entry is None:
            raise ManifestError(f"its manifest lists no {STATE_FILE}")
        with self.storage.open_read(f"{directory}/{STATE_FILE}") as f:
            data = read_all(f)
        actual = FileEntry(hashlib.sha256(data).hexdigest(), len(data))
        problem = check_entry(STATE_FILE, entry, actual)
        if problem:
            raise ManifestError(problem)
        return manifest, data

    def _manifest(self, directory: str) -> Manifest:
        manifest = read_manifest(self.storage, directory)
        if _step_of(directory) != manifest.step:
            raise ManifestError(f"its manifest says step {manifest.step}")
        return manifest

    def _directories_newest_first(self) -> list[str]:
        names = [name for name in self.storage.list_dir() if _STEP_DIR.match(name)]
        return sorted(names, key=_step_of, reverse=True)

    def _retain(self) -> None:
        retain(self.storage, self._directories_newest_first(), self.keep, _step_of)


def first_valid(
    storage: Storage, directories: Iterable[str], check: Callable[[str], T]
) -> tuple[str, T] | None:
    """The first checkpoint directory that ``check`` accepts, and what it returned.

    Give ``directories`` newest first. ``check`` raises :class:`ManifestError`
    (or FileNotFoundError) for a partial or corrupt checkpoint, which is skipped
    with a warning.
    """
    for directory in directories:
        try:
            return directory, check(directory)
        except (ManifestError, FileNotFoundError) as exc:
            log.warning("skipping checkpoint %s: %s", storage.local_path(directory), _one_line(exc))
    return None


def retain(
    storage: Storage, directories: list[str], keep: int, step_of: Callable[[str], int]
) -> None:
    """Keep the newest ``keep`` sealed checkpoints; drop partial ones older than them.

    ``directories`` are the checkpoint directories, newest first; a sealed one
    has a manifest.
    """
    sealed: list[str] = []
    partial: list[str] = []
    for directory in directories:
        has_manifest = storage.exists(f"{directory}/{MANIFEST_NAME}")
        (sealed if has_manifest else partial).append(directory)
    for directory in sealed[keep:]:
        storage.remove_tree(directory)
    if sealed:
        newest = step_of(sealed[0])
        for directory in partial:
            if step_of(directory) < newest:
                storage.remove_tree(directory)


def _step_of(directory: str) -> int:
    match = _STEP_DIR.match(directory)
    return int(match.group(1)) if match else -1


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
