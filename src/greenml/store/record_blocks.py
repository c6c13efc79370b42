"""Moved to :mod:`greenml.record.blocks` (the record sits on the ground floor); kept one release."""

from __future__ import annotations

from greenml.record.blocks import *  # noqa: F403
