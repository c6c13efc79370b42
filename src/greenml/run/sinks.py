"""Where a finished run goes after the store, in order: trackers, push, ``--json-out``.

The store and its ledger come first and are the recorder's (:mod:`greenml.run.recorder`:
stored, then sent to the team server, with no read-back). Every sink here gets the
same :class:`Finished` in hand: the stored :class:`~greenml.record.run_record.RunRecord`
(``None`` when the store did not take it) and the record as JSON — the stored one, or
the unsaved one, so that a push or ``--json-out`` never loses a run the store refused.
What is rendered for a sink (the impact statement) is rendered only when one asks.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from greenml.record.run_record import RunRecord
    from greenml.run.window_feed import WindowFeed

log = logging.getLogger("greenml")


@dataclass
class Finished:
    """A finished run as the sinks take it."""

    record: RunRecord | None  # the stored record; None: not stored here
    data: dict[str, Any]  # the record as JSON (stored, or unsaved with ``saved: false``)
    _statement: list[str | None] = field(default_factory=list, repr=False)

    @property
    def run(self) -> RunRecord:
        """The record, typed: the stored one, or the unsaved one read leniently."""
        if self.record is not None:
            return self.record
        from greenml.record.run_record import RunRecord

        return RunRecord.from_dict(self.data)

    def statement(self) -> str | None:
        """The impact statement (Markdown) of a stored run, rendered on the first ask."""
        if not self._statement:
            self._statement.append(_render_statement(self.record))
        return self._statement[0]


class RunSink(Protocol):
    """One place a finished run goes; ``deliver`` may raise (the session warns, goes on)."""

    name: str

    def deliver(self, finished: Finished) -> None: ...


class TrackerSink:
    """The trackers of ``--log-to`` (MLflow, W&B, TensorBoard): the last windows, the record
    and its statement; the trackers close."""

    name = "trackers"

    def __init__(self, feed: WindowFeed) -> None:
        self.feed = feed

    def deliver(self, finished: Finished) -> None:
        if not self.feed.sinks:
            return
        record = finished.record.to_dict() if finished.record is not None else None
        self.feed.finish(record, finished.statement())


class PushSink:
    """``--push-gateway`` / ``--otlp-endpoint``: the run's figures pushed once; a failure
    is a warning on stderr (the command's exit code stands)."""

    name = "push"

    def __init__(self, gateway: str | None, otlp_endpoint: str | None) -> None:
        self.gateway, self.otlp_endpoint = gateway, otlp_endpoint

    def deliver(self, finished: Finished) -> None:
        from greenml.exporter.push import push_all

        gateways = [self.gateway] if self.gateway else []
        otlp = [self.otlp_endpoint] if self.otlp_endpoint else []
        for warning in push_all(finished.run, gateways, otlp):
            print(f"greenml: warning: {warning}", file=sys.stderr)


class JsonOutSink:
    """``--json-out FILE``: the record as JSON (the unsaved one when the store refused it)."""

    name = "--json-out"

    def __init__(self, path: Path) -> None:
        self.path = path

    def deliver(self, finished: Finished) -> None:
        from greenml.store.export import json_text

        try:
            self.path.write_text(json_text(finished.data, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            print(f"greenml: error: --json-out {self.path} not written: {exc.strerror or exc}",
                  file=sys.stderr)  # fmt: skip


def _render_statement(record: RunRecord | None) -> str | None:
    if record is None:
        return None
    try:
        from greenml.report.statement import statement_markdown

        return statement_markdown(record.to_dict())
    except Exception as exc:
        log.debug("greenml: no impact statement: %r", exc)
        return None
