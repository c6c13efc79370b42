"""Moved to :mod:`greenml.record.schema` (the record sits on the ground floor); kept one release."""

from __future__ import annotations

from greenml.record.schema import *  # noqa: F403
