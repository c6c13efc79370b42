"""Moved to :mod:`greenml.record.codec` (the record sits on the ground floor); kept one release."""

from __future__ import annotations

from greenml.record.codec import *  # noqa: F403
