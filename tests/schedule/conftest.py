"""Fixtures shared with the live-API tests: a local fake API server and fast HTTP settings."""

from __future__ import annotations

from tests.accounting.live.conftest import api, fast, sleeps

__all__ = ["api", "fast", "sleeps"]
