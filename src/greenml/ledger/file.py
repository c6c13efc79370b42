"""The ledger file: JSON Lines, appended under an exclusive ``flock``, one fsynced write each.

Several processes may append at once: each takes the lock, reads the last
entry, writes its own line with one ``write`` on an ``O_APPEND`` descriptor,
fsyncs and lets go. A line torn by a crash is left in place (``verify`` names
it) and the next entry chains to the last whole one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import LedgerError
from greenml.ledger.canonical import record_sha256
from greenml.ledger.entry import (
    GENESIS_HASH,
    Entry,
    compute_entry_hash,
    parse_line,
)
from greenml.ledger.keys import as_private_key, sign
from greenml.ledger.keys import key_id as id_of
from greenml.ledger.paths import key_path_from_env, ledger_path

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

_BLOCK = 8192


@dataclass(frozen=True)
class Line:
    """One line of the ledger file: its entry, or why it is not one."""

    number: int
    entry: Entry | None
    error: str | None = None
    unexpected: list[str] = field(default_factory=list)


def append(
    record: Mapping[str, Any], *, path: str | Path | None = None, private_key: Any = None
) -> Entry:
    """Append a run record's hash to the ledger.

    Args:
        record: The run record (``id`` names the run), as the store returns it.
        path: The ledger file; ``None`` for ``GREENML_LEDGER`` or the default store's.
        private_key: An Ed25519 private key or a PEM path; ``None`` for
            ``GREENML_LEDGER_KEY`` if set, else the entry is not signed.

    Raises:
        LedgerError: The ledger cannot be written, or the record not canonicalized.
        ConfigError: The key cannot be loaded.
    """
    target = Path(path) if path is not None else ledger_path(None)
    if target is None:
        raise LedgerError("an in-memory store has no ledger: set GREENML_LEDGER")
    chosen = private_key if private_key is not None else key_path_from_env()
    key = as_private_key(chosen) if chosen is not None else None
    return append_hash(target, str(record["id"]), record_sha256(record), key)


def append_hash(
    path: Path,
    run_id: str,
    record_hash: str,
    private_key: Ed25519PrivateKey | None = None,
    on_appended: Callable[[Entry, str | None], None] | None = None,
    kind: str | None = None,
) -> Entry:
    """Append an entry for a record hash (see :func:`append`); ``kind`` for an entry that
    is not a run's (``saving``: ``run_id`` then names the saving, ``record_sha256`` its hash).

    ``on_appended(entry, first_hash)`` runs once the line is on disk, still under the
    lock (so a reader sees the line only after it ran); ``first_hash`` is the
    ``entry_hash`` of the ledger's seq 1 (``None``: its first line is not one).
    """
    created = not path.exists()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise LedgerError(f"cannot open the ledger {path}: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        last, whole = _last_entry(fd)
        fields: dict[str, Any] = {
            "seq": last.seq + 1 if last else 1,
            "run_id": run_id,
            "record_sha256": record_hash,
            "prev_hash": last.entry_hash if last else GENESIS_HASH,
            "appended_at": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
        }
        if kind is not None:
            fields["kind"] = kind
        entry_hash = compute_entry_hash(fields)
        signature = key_id = None
        if private_key is not None:
            signature = sign(private_key, entry_hash.encode("ascii"))
            key_id = id_of(private_key.public_key())
        entry = Entry(**fields, entry_hash=entry_hash, signature=signature, key_id=key_id)
        _write_all(fd, (("" if whole else "\n") + entry.to_line()).encode("utf-8"))
        os.fsync(fd)
        if on_appended is not None:
            first = entry if entry.seq == 1 else _first_entry(fd)
            on_appended(entry, first.entry_hash if first and first.seq == 1 else None)
    except OSError as exc:
        raise LedgerError(f"cannot append to the ledger {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)  # also releases the lock
    if created:
        _fsync_dir(path.parent)
    return entry


def read_lines(path: str | Path) -> list[Line]:
    """Every line of the ledger (under a shared lock, so no half-written line is seen).

    Raises:
        LedgerError: The file does not exist or cannot be read.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            data = handle.read()
    except FileNotFoundError as exc:
        raise LedgerError(f"no ledger at {path} (no run has been ledgered yet?)") from exc
    except OSError as exc:
        raise LedgerError(f"cannot read the ledger {path}: {exc.strerror or exc}") from exc
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    return [_parse(number, raw) for number, raw in enumerate(raw_lines, start=1)]


def entries(path: str | Path) -> list[Entry]:
    """The entries of the ledger in file order (unreadable lines left out)."""
    return [line.entry for line in read_lines(path) if line.entry is not None]


def _parse(number: int, raw: bytes) -> Line:
    if not raw.strip():
        return Line(number, None, "blank line")
    try:
        entry, unexpected = parse_line(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return Line(number, None, "not UTF-8")
    except LedgerError as exc:
        return Line(number, None, str(exc))
    return Line(number, entry, None, unexpected)


def _last_entry(fd: int) -> tuple[Entry | None, bool]:
    """The last whole entry of the file, and whether the file ends with a newline."""
    size = os.fstat(fd).st_size
    if size == 0:
        return None, True
    whole = os.pread(fd, 1, size - 1) == b"\n"
    for raw in _lines_backwards(fd, size):
        with contextlib.suppress(LedgerError, UnicodeDecodeError):
            return parse_line(raw.decode("utf-8"))[0], whole
    return None, whole


def _first_entry(fd: int) -> Entry | None:
    """The entry on the file's first line (``None``: it is not one)."""
    data, pos = b"", 0
    while b"\n" not in data:
        block = os.pread(fd, _BLOCK, pos)
        if not block:
            break
        data, pos = data + block, pos + len(block)
    try:
        return parse_line(data.split(b"\n", 1)[0].decode("utf-8"))[0]
    except (LedgerError, UnicodeDecodeError):
        return None


def _lines_backwards(fd: int, size: int) -> Iterator[bytes]:
    """The file's newline-terminated lines, last first (a torn last line is skipped)."""
    pos, carry, skipping = size, b"", True
    while pos > 0:
        step = min(_BLOCK, pos)
        pos -= step
        pieces = (os.pread(fd, step, pos) + carry).split(b"\n")
        if skipping:  # drop what follows the last newline: nothing, or a torn line
            if len(pieces) == 1:
                carry = b""
                continue
            pieces.pop()
            skipping = False
        carry = pieces[0]  # may continue in the block before
        yield from reversed(pieces[1:])
    if carry:
        yield carry


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
