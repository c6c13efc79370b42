"""Prometheus exporter: the Meter's live state as a scrape endpoint.

``Exporter(meter, ...).serve(host, port)``; the collector reads cached values
(see :mod:`greenml.exporter.state`), the loop in :meth:`Exporter.run` samples.
"""

from __future__ import annotations

from greenml.exporter.collector import EXPOSED_NAMES, GreenmlCollector
from greenml.exporter.server import Exporter
from greenml.exporter.state import DeviceState, LiveState, Snapshot

__all__ = ["EXPOSED_NAMES", "DeviceState", "Exporter", "GreenmlCollector", "LiveState", "Snapshot"]
