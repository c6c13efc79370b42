"""Where checkpoints live: a local directory or, with fsspec, an object store.

A :class:`Storage` writes whole files atomically and names them relative to
its root (``step-0000000120/state.pt``). Locally that means a temporary file
in the same directory, ``fsync`` of the file, ``rename`` over the final name,
then ``fsync`` of the directory, so a crash leaves either the old file or the
new one, never half of one. On object stores (``s3://``, ``gs://``, anything
fsspec opens) an object becomes visible only when its upload completes; the
manifest, written last, is what marks a checkpoint complete on both.

Both backends check at construction that the root can be written, so an
unreachable store fails at start, not at the first save. A full disk or a
file-size limit becomes one :class:`CheckpointError` that says so.

Lazy imports: fsspec (~0.1 s) is imported inside the functions that use it, so importing
this module stays cheap.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Protocol

from greenml.errors import CheckpointError, ConfigError, GreenmlError

Writer = Callable[[IO[bytes]], None]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_CHUNK_BYTES = 1 << 20


class Storage(Protocol):
    """The few file operations the checkpointer needs, relative to one root."""

    url: str

    def write_atomic(self, name: str, write: Writer) -> None:
        """Create or replace ``name`` with what ``write`` writes, all or nothing."""
        ...

    def open_read(self, name: str) -> AbstractContextManager[IO[bytes]]:
        """Open ``name`` for reading."""
        ...

    def exists(self, name: str) -> bool:
        """Whether the file ``name`` exists."""
        ...

    def list_dir(self, name: str = "") -> list[str]:
        """Names (not paths) of the entries directly under ``name``."""
        ...

    def remove(self, name: str) -> None:
        """Delete the file ``name`` if present."""
        ...

    def remove_tree(self, name: str) -> None:
        """Delete the directory ``name`` and everything under it."""
        ...

    def local_path(self, name: str) -> str:
        """A path or URL for ``name`` that other libraries (fsspec, open) accept."""
        ...


def open_storage(path: str | os.PathLike[str]) -> Storage:
    """The storage for a local path, a ``file://`` URL, or an fsspec URL.

    Raises:
        ConfigError: The URL's protocol is unknown or its package is missing.
        CheckpointError: The location cannot be created or written.
    """
    text = os.fspath(path)
    if text.startswith("file://"):
        return LocalStorage(text[len("file://") :])
    if _URL.match(text):
        return FsspecStorage(text)
    return LocalStorage(text)


def write_error(exc: OSError, where: str) -> CheckpointError:
    """One clear error for a failed checkpoint write (full disk, size limit, …)."""
    code = exc.errno
    if code == errno.ENOSPC:
        cause = "no space left on the device"
    elif code == errno.EFBIG:
        cause = "file too large (a file-size limit such as `ulimit -f`, or the filesystem's)"
    elif code == getattr(errno, "EDQUOT", -1):
        cause = "disk quota exceeded"
    elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
        cause = "permission denied or read-only filesystem"
    else:
        cause = exc.strerror or type(exc).__name__
    return CheckpointError(
        f"cannot write checkpoint {where}: {cause}; the previous checkpoints are intact"
    )


class LocalStorage:
    """A directory on a local (or network-mounted POSIX) filesystem."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()
        self.url = str(self.root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".greenml-probe-", dir=self.root)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise CheckpointError(
                f"checkpoint directory {self.root} cannot be written: {exc.strerror or exc}"
            ) from exc

    def write_atomic(self, name: str, write: Writer) -> None:
        final = self.root / name
        tmp: str | None = None
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
            tmp = None
            fsync_dir(final.parent)
        except OSError as exc:
            raise write_error(exc, str(final)) from exc
        finally:
            if tmp is not None:
                _unlink_quietly(tmp)

    @contextmanager
    def open_read(self, name: str) -> Iterator[IO[bytes]]:
        with open(self.root / name, "rb") as f:
            yield f

    def exists(self, name: str) -> bool:
        return (self.root / name).is_file()

    def list_dir(self, name: str = "") -> list[str]:
        try:
            return sorted(entry.name for entry in os.scandir(self.root / name))
        except FileNotFoundError:
            return []

    def remove(self, name: str) -> None:
        _unlink_quietly(str(self.root / name))

    def remove_tree(self, name: str) -> None:
        shutil.rmtree(self.root / name, ignore_errors=True)

    def local_path(self, name: str) -> str:
        return str(self.root / name)


class FsspecStorage:
    """A prefix on any filesystem fsspec opens (``s3://``, ``gs://``, ``memory://``…)."""

    def __init__(self, url: str, **storage_options: Any) -> None:
        try:
            import fsspec
        except ImportError as exc:
            raise ConfigError(
                f"checkpoint location {url} needs fsspec: pip install 'greenml[resilience]'"
            ) from exc
        self.url = url.rstrip("/")
        try:
            self._fs, root = fsspec.core.url_to_fs(self.url, **storage_options)
        except (ImportError, ValueError) as exc:
            raise ConfigError(f"cannot open checkpoint location {url}: {exc}") from exc
        self._root = str(root).rstrip("/")
        self._probe()

    def _probe(self) -> None:
        """Write and delete a small object, so an unreachable store fails now."""
        probe = self._path(f".greenml-probe-{uuid.uuid4().hex}")
        try:
            self._fs.makedirs(self._root, exist_ok=True)
            self._fs.pipe_file(probe, b"greenml")
            self._fs.rm_file(probe)
        except Exception as exc:  # any backend failure means: not usable
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise CheckpointError(
                f"checkpoint store {self.url} is unreachable or not writable: {detail}"
            ) from exc

    def _path(self, name: str) -> str:
        return f"{self._root}/{name}" if name else self._root

    def write_atomic(self, name: str, write: Writer) -> None:
        path = self._path(name)
        try:
            with self._fs.open(path, "wb") as f:
                write(f)
        except GreenmlError:
            self._remove_quietly(path)
            raise
        except OSError as exc:
            self._remove_quietly(path)
            raise write_error(exc, f"{self.url}/{name}") from exc
        except Exception as exc:  # object-store clients raise their own types
            self._remove_quietly(path)
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise CheckpointError(
                f"cannot write checkpoint {self.url}/{name}: {detail}; "
                "the previous checkpoints are intact"
            ) from exc

    @contextmanager
    def open_read(self, name: str) -> Iterator[IO[bytes]]:
        with self._fs.open(self._path(name), "rb") as f:
            yield f

    def exists(self, name: str) -> bool:
        return bool(self._fs.isfile(self._path(name)))

    def list_dir(self, name: str = "") -> list[str]:
        try:
            entries = self._fs.ls(self._path(name), detail=False)
        except FileNotFoundError:
            return []
        return sorted(str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries)

    def remove(self, name: str) -> None:
        self._remove_quietly(self._path(name))

    def remove_tree(self, name: str) -> None:
        with suppress(FileNotFoundError):
            self._fs.rm(self._path(name), recursive=True)

    def local_path(self, name: str) -> str:
        return f"{self.url}/{name}"

    def _remove_quietly(self, path: str) -> None:
        with suppress(Exception):  # best effort: a partial object is harmless without a manifest
            self._fs.rm_file(path)


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a directory's entries (a rename, a new file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_chunks(f: IO[bytes]) -> Iterator[bytes]:
    """Iterate over a file in 1 MiB chunks."""
    while chunk := f.read(_CHUNK_BYTES):
        yield chunk


def _unlink_quietly(path: str) -> None:
    with suppress(FileNotFoundError):
        os.unlink(path)
