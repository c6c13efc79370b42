"""Moved to :mod:`greenml.record.run_record` (the record on the ground floor); kept a release."""

from __future__ import annotations

from greenml.record.run_record import *  # noqa: F403
