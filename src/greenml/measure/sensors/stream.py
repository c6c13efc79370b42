"""Power from a tool that prints samples (``powermetrics``, ``tegrastats``).

A :class:`StreamPowerSensor` starts the tool, reads its output on a daemon thread,
parses each sample into watts per device and keeps the latest; the Meter samples
and integrates them (method ``power-integrated``). When the tool exits or its
output stops parsing, reads raise :class:`SensorError` (a labelled gap), never
anything that reaches the user's program.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from greenml.errors import SensorError, SensorUnavailable
from greenml.measure.sensors.base import Device, Sensor

log = logging.getLogger(__name__)

Parse = Callable[[bytes], dict[str, float]]
Source = Callable[[], Iterable[bytes]]


class ProcessRecords:
    """The records a command prints, split at ``separator``; :meth:`close` ends the command.

    Raises:
        SensorUnavailable: The command cannot be started.
    """

    def __init__(self, command: Sequence[str], separator: bytes) -> None:
        self._separator = separator
        try:
            self._proc = subprocess.Popen(
                list(command),
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
        except OSError as exc:
            raise SensorUnavailable(f"cannot start {command[0]}: {exc.strerror}") from exc

    def __iter__(self) -> Iterator[bytes]:
        stdout = self._proc.stdout
        assert stdout is not None
        buffer = b""
        try:
            while chunk := os.read(stdout.fileno(), 65536):
                buffer += chunk
                *done, buffer = buffer.split(self._separator)
                yield from (r for r in done if r.strip())
            if buffer.strip():
                yield buffer
        finally:
            self.close()

    def close(self) -> None:
        """Stop the command (once it is gone, its output ends)."""
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                self._proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=2)


def process_records(command: Sequence[str], separator: bytes) -> ProcessRecords:
    """Start ``command``; its output split into records at ``separator``."""
    return ProcessRecords(command, separator)


class StreamPowerSensor(Sensor):
    """Latest power per device from a stream of tool samples.

    Args:
        devices: What the samples measure.
        parse: One record → watts by device key (a record it cannot read: ``{}``).
        source: Opens the stream of records; None: nothing is started, samples come
            through :meth:`feed` (tests, and doctor's dry open).
        tool: The tool's name, for messages.
    """

    def __init__(
        self, devices: Sequence[Device], parse: Parse, source: Source | None, tool: str
    ) -> None:
        self._devices = list(devices)
        self._parse = parse
        self._tool = tool
        self._latest: dict[str, float] = {}
        self._ended: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._source: Iterable[bytes] | None = None
        if source is not None:
            self._source = source()
            records = iter(self._source)
            self._thread = threading.Thread(
                target=self._pump, args=(records,), name=f"greenml-{tool}", daemon=True
            )
            self._thread.start()

    @property
    def devices(self) -> list[Device]:
        return list(self._devices)

    def feed(self, record: bytes) -> None:
        """Take one sample; a record that does not parse is skipped (and logged)."""
        try:
            watts = self._parse(record)
        except Exception as exc:  # output from outside (plist/XML errors too): skip the sample
            log.debug("%s: unreadable sample skipped: %s", self._tool, exc)
            return
        if watts:
            with self._lock:
                self._latest.update(watts)

    def end(self, why: str) -> None:
        """The stream is over: later reads are gaps that say ``why``."""
        with self._lock:
            self._ended = why

    def read_power_w(self) -> dict[str, float]:
        with self._lock:
            if self._ended is not None:
                raise SensorError(f"{self._tool} stopped: {self._ended}")
            return dict(self._latest)

    def close(self) -> None:
        """Stop the tool (its reader thread then ends)."""
        closer = getattr(self._source, "close", None)
        if callable(closer):
            with contextlib.suppress(Exception):
                closer()

    def _pump(self, records: Iterator[bytes]) -> None:
        try:
            for record in records:
                self.feed(record)
            self.end("it exited")
        except Exception as exc:  # a thread of ours: report as a gap, never raise
            self.end(str(exc))
