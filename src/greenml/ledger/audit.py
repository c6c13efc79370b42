"""Check a ledger: every entry intact, in order, chained, signed, and matching the store.

Each problem names the entry (seq and run id, or the line) and what is wrong.
The chain alone cannot show entries cut from the end, or a tail rewritten
from some entry on with fresh hashes: the head the store keeps
(:mod:`greenml.ledger.anchor`), signatures, a signed statement
(:mod:`greenml.ledger.statement`) held by someone else, and the store check
cover those.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenml.errors import RunNotFound, StoreError
from greenml.ledger.canonical import record_sha256
from greenml.ledger.entry import GENESIS_HASH, Entry
from greenml.ledger.file import read_lines
from greenml.ledger.keys import as_public_key, key_id, signature_valid
from greenml.ledger.samples import FIELD, samples_digest

if TYPE_CHECKING:
    from greenml.store.repository import Store

Numbered = tuple[int, Entry]
"""An entry and its line number in the file."""

_FINAL = ("completed", "failed", "interrupted")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the ledger."""

    kind: str  # malformed, modified, removed, inserted, reordered, unsigned, wrong key,
    # bad signature, record modified, samples modified, index modified, run missing
    detail: str
    seq: int | None = None
    run_id: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.seq is not None:
            where = f"seq {self.seq}" + (f" (run {self.run_id})" if self.run_id else "")
        else:
            where = "ledger" if self.line is None else f"line {self.line}"
        return f"{where}: {self.kind}: {self.detail}"


@dataclass
class VerifyResult:
    """What :func:`verify` found."""

    path: Path
    entries: list[Entry] = field(default_factory=list)  # by seq, inserted ones left out
    problems: list[Problem] = field(default_factory=list)
    signatures_checked: int = 0
    signers: set[str] = field(default_factory=set)  # key ids of the signed entries
    unledgered: list[str] = field(default_factory=list)  # finished stored runs not ledgered

    @property
    def ok(self) -> bool:
        """True when no problem was found."""
        return not self.problems

    @property
    def count(self) -> int:
        """How many entries the chain holds."""
        return len(self.entries)

    @property
    def head(self) -> str | None:
        """The ``entry_hash`` of the last entry."""
        return self.entries[-1].entry_hash if self.entries else None


def verify(
    ledger_path: str | Path, store: Store | None = None, public_key: Any = None
) -> VerifyResult:
    """Check a ledger file and name each problem.

    Args:
        ledger_path: The ledger (JSON Lines).
        store: Also check that each ledgered run's record is still what was hashed.
        public_key: An Ed25519 public key (or a PEM path): every entry must be
            signed by it.

    Raises:
        LedgerError: The ledger cannot be read.
        ConfigError: The public key cannot be loaded.
    """
    result = VerifyResult(Path(ledger_path))
    problems = result.problems
    parsed: list[Numbered] = []
    for line in read_lines(ledger_path):
        if line.entry is None:
            problems.append(
                Problem("malformed", f"unreadable entry: {line.error}", line=line.number)
            )
            continue
        parsed.append((line.number, line.entry))
        if line.unexpected:
            e = line.entry
            names = ", ".join(line.unexpected)
            problems.append(Problem("modified", f"unexpected field(s) {names}", e.seq, e.run_id))
    chain = _drop_inserted(parsed, problems)
    for number, e in chain:
        if e.computed_hash() != e.entry_hash:
            detail = f"entry_hash does not match its fields: the entry was edited (line {number})"
            problems.append(Problem("modified", detail, e.seq, e.run_id))
    _check_order(chain, problems)
    by_seq: dict[int, Entry] = {}
    for _, e in chain:
        by_seq.setdefault(e.seq, e)
    _check_gaps(by_seq, problems)
    _check_links(by_seq, problems)
    result.entries = [by_seq[s] for s in sorted(by_seq)]
    if public_key is not None:
        _check_signatures(result, public_key)
    if store is not None:
        _check_store(result, store)
        _check_anchor(result, by_seq, store)
    problems.sort(key=lambda p: (p.seq is None, p.seq or 0, p.line or 0))
    return result


def _drop_inserted(parsed: list[Numbered], problems: list[Problem]) -> list[Numbered]:
    """The entries without forged extra ones: of two entries with one seq, keep the one
    the next entry links to."""
    groups: dict[int, list[Numbered]] = defaultdict(list)
    linked: dict[int, set[str]] = defaultdict(set)  # seq → hashes the next entries link to
    for item in parsed:
        groups[item[1].seq].append(item)
        linked[item[1].seq - 1].add(item[1].prev_hash)
    kept: list[Numbered] = []
    for item in parsed:
        number, e = item
        group = groups[e.seq]
        if len(group) == 1:
            kept.append(item)
            continue
        genuine = [
            x for x in group
            if x[1].entry_hash in linked[e.seq] and x[1].computed_hash() == x[1].entry_hash
        ]  # fmt: skip
        if len(genuine) == 1:
            if item is genuine[0]:
                kept.append(item)
            else:
                detail = (f"a second entry with seq {e.seq} (line {number}) that no later "
                          "entry links to: a forged entry was inserted")  # fmt: skip
                problems.append(Problem("inserted", detail, e.seq, e.run_id, number))
        elif item is group[0]:
            kept.append(item)
            lines = ", ".join(str(n) for n, _ in group)
            detail = (
                f"seq {e.seq} appears {len(group)} times (lines {lines}): an entry was inserted"
            )
            problems.append(Problem("inserted", detail, e.seq, None, number))
    return kept


def _check_order(chain: list[Numbered], problems: list[Problem]) -> None:
    top: Entry | None = None
    for number, e in chain:
        if top is not None and e.seq < top.seq:
            detail = f"line {number} comes after {top.where()}: entries were reordered"
            problems.append(Problem("reordered", detail, e.seq, e.run_id, number))
        elif top is None or e.seq > top.seq:
            top = e


def _check_gaps(by_seq: dict[int, Entry], problems: list[Problem]) -> None:
    expected = 1
    for s in sorted(by_seq):
        if s > expected:
            before = by_seq.get(expected - 1)
            span = f"seq {expected}" if s - 1 == expected else f"seq {expected} to {s - 1}"
            where = f"between {before.where()} and " if before else "before "
            detail = f"{span} missing: entry removed ({where}{by_seq[s].where()})"
            problems.append(Problem("removed", detail, expected))
        expected = s + 1


def _check_links(by_seq: dict[int, Entry], problems: list[Problem]) -> None:
    by_hash = {e.entry_hash: e for e in by_seq.values()}
    for s in sorted(by_seq):
        e = by_seq[s]
        if s == 1:
            if e.prev_hash != GENESIS_HASH:
                detail = "prev_hash of the first entry is not 64 zeros: entries before it removed"
                problems.append(Problem("removed", detail, s, e.run_id))
            continue
        before = by_seq.get(s - 1)
        if before is None or e.prev_hash == before.entry_hash:
            continue  # a gap is reported once, as removed
        other = by_hash.get(e.prev_hash)
        if other is not None:
            detail = f"prev_hash links to {other.where()}, not to seq {s - 1}"
            problems.append(Problem("reordered", detail, s, e.run_id))
        else:
            detail = (f"seq {s}'s prev_hash is not this entry's entry_hash: one of the two "
                      "was edited and re-hashed, or replaced")  # fmt: skip
            problems.append(Problem("modified", detail, before.seq, before.run_id))


def _check_signatures(result: VerifyResult, public_key: Any) -> None:
    key = as_public_key(public_key)
    kid = key_id(key)
    signed = [e for e in result.entries if e.signature is not None]
    result.signers = {e.key_id or "?" for e in signed}
    if result.entries and not signed:
        detail = "no entry is signed (GREENML_LEDGER_KEY was not set when runs were ledgered)"
        result.problems.append(Problem("unsigned", detail))
        return
    for e in result.entries:
        if e.signature is None:
            result.problems.append(Problem("unsigned", "the entry is not signed", e.seq, e.run_id))
        elif e.key_id != kid:
            detail = f"signed by key {e.key_id}, not by the given key {kid}"
            result.problems.append(Problem("wrong key", detail, e.seq, e.run_id))
        elif not signature_valid(key, e.signature, e.entry_hash.encode("ascii")):
            detail = "the signature does not verify over entry_hash"
            result.problems.append(Problem("bad signature", detail, e.seq, e.run_id))
        else:
            result.signatures_checked += 1


def _check_store(result: VerifyResult, store: Store) -> None:
    current: dict[str, str | None] = {}
    timelines_checked: set[str] = set()
    for e in result.entries:
        if e.kind is not None:
            _check_kind(result, store, e)
            continue
        if e.run_id not in current:
            try:
                record = store.get_record(e.run_id)
                current[e.run_id] = record_sha256(record) if record["id"] == e.run_id else None
            except RunNotFound:
                current[e.run_id] = None
            except StoreError as exc:
                detail = f"cannot be read from the store: {exc}"
                result.problems.append(Problem("run missing", detail, e.seq, e.run_id))
                current[e.run_id] = e.record_sha256  # reported once
                continue
        now = current[e.run_id]
        if now == e.record_sha256 and e.run_id not in timelines_checked:
            timelines_checked.add(e.run_id)
            for problem in (_timeline_problem(store, e), _index_problem(store, e)):
                if problem is not None:
                    result.problems.append(problem)
        if now is None:
            detail = "the run is not in the store: deleted after it was ledgered"
            result.problems.append(Problem("run missing", detail, e.seq, e.run_id))
        elif now != e.record_sha256:
            detail = (f"the stored run record was changed after it was ledgered (record_sha256 "
                      f"{e.record_sha256[:12]}… in the ledger, {now[:12]}… now)")  # fmt: skip
            result.problems.append(Problem("record modified", detail, e.seq, e.run_id))
    ledgered = {e.run_id for e in result.entries}
    # The ledger is in use from its first entry on (an existing file with no entry: from
    # the start): a finished run that ENDED since (runs are ledgered right after they end)
    # and is not ledgered had its entry removed. Runs from before the ledger are noted.
    since = _instant(result.entries[0].appended_at) if result.entries else None
    for row in store.list_runs(limit=0):
        if row["status"] not in _FINAL or row["id"] in ledgered:
            continue
        ended = _instant(row["started_at"]) + timedelta(seconds=row.get("duration_s") or 0.0)
        if since is None or ended >= since:
            detail = (f"finished run {row['id']} (ended {ended:%Y-%m-%d %H:%M:%S} UTC) is in "
                      "the store but not in the ledger: its entry was removed")  # fmt: skip
            result.problems.append(Problem("removed", detail, run_id=row["id"]))
        else:
            result.unledgered.append(row["id"])


def _check_kind(result: VerifyResult, store: Store, e: Entry) -> None:
    """An entry that is not a run's: its document, kept in the store, must hash as ledgered."""
    from greenml.ledger.kinds import stored_document

    document = stored_document(store, e)
    if document is None:
        detail = f"the {e.kind} {e.run_id} is not in the store: deleted after it was ledgered"
        result.problems.append(Problem("run missing", detail, e.seq, e.run_id))
    elif record_sha256(document) != e.record_sha256:
        detail = f"the stored {e.kind} was changed after it was ledgered"
        result.problems.append(Problem("record modified", detail, e.seq, e.run_id))


def _check_anchor(result: VerifyResult, by_seq: dict[int, Entry], store: Store) -> None:
    """The newest entry the store saw appended to this chain must still be in it."""
    first = by_seq.get(1)
    if first is None:
        return  # the first entries are gone: named as removed already
    from greenml.ledger.anchor import read_head  # SQLAlchemy: only when a store is checked

    anchor = read_head(store, first.entry_hash)
    if anchor is None:
        return  # a store from before anchors, or one that never saw this chain appended to
    top = max(by_seq)
    kept = by_seq.get(anchor.seq)
    if anchor.seq > top:
        span = f"seq {top + 1}" if anchor.seq == top + 1 else f"seq {top + 1} to {anchor.seq}"
        detail = (f"{span} missing from the end: the store saw seq {anchor.seq} (entry_hash "
                  f"{anchor.entry_hash[:12]}…) appended; the ledger ends at seq {top}")  # fmt: skip
        result.problems.append(Problem("removed", detail, top + 1))
    elif kept is not None and kept.entry_hash != anchor.entry_hash:
        detail = (f"not the entry the store recorded when it was appended (entry_hash "
                  f"{anchor.entry_hash[:12]}… then, {kept.entry_hash[:12]}… now): "
                  "it was replaced")  # fmt: skip
        result.problems.append(Problem("modified", detail, kept.seq, kept.run_id))


def _timeline_problem(store: Store, e: Entry) -> Problem | None:
    """The run's samples against the digest its ledgered record carries (if it has one)."""
    stated = store.get_record(e.run_id).get(FIELD)
    if not stated:
        return None  # a run stored before timelines were digested
    now = samples_digest(store.samples(e.run_id))
    if now == stated:
        return None
    detail = (f"the run's power timeline (samples) was changed after it was ledgered "
              f"({FIELD} {stated[:12]}… in the record, {now[:12]}… now)")  # fmt: skip
    return Problem("samples modified", detail, e.seq, e.run_id)


def _index_problem(store: Store, e: Entry) -> Problem | None:
    """What the store keeps of the run beside its record (the tag index ``runs list --tag``
    and reports filter on, and ``runs.hostname``) against the ledgered record: the index must
    hold the record's tags; a record that carries ``index_sha256`` (greenml since this check)
    fixes the host name too."""
    from greenml.store.finishing import INDEX_FIELD, index_digest, stored_index

    record = store.get_record(e.run_id)
    hostname, index = stored_index(store, e.run_id)
    tags = {str(k): str(v) for k, v in (record.get("tags") or {}).items()}
    if index != tags:
        changed = sorted(set(index.items()) ^ set(tags.items()))
        detail = (f"the run's tag index was changed after it was ledgered (rows that differ "
                  f"from the record's tags: {changed[:5]}): `runs list --tag` and reports "
                  "would select it by tags it does not have")  # fmt: skip
        return Problem("index modified", detail, e.seq, e.run_id)
    stated = record.get(INDEX_FIELD)
    if stated and index_digest(hostname, index.items()) != stated:
        detail = (f"the run's host name in the store was changed after it was ledgered "
                  f"(now {hostname!r}; {INDEX_FIELD} {stated[:12]}… in the record)")
        return Problem("index modified", detail, e.seq, e.run_id)
    return None


def _instant(iso: str) -> datetime:
    """An ISO 8601 time of the ledger or the store, comparable whatever its precision."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))
