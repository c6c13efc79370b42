"""Fixtures: a ledger in a temp dir, runs finished through the real store on both backends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from greenml.ledger import hook
from greenml.ledger.keys import generate_keypair
from greenml.run.spool import ingest
from greenml.store import open_store
from greenml.store.repository import Store
from greenml.store.url import resolve_url
from tests.store.conftest import db_url, pg_admin_url, pg_url

__all__ = ["db_url", "pg_admin_url", "pg_url"]  # fixtures shared with the store tests

# floats whose text forms differ between naive serializers; all must round-trip exactly
TRICKY = {"third": 1 / 3, "tenth": 0.1, "tiny": 1e-7, "huge": 1.5e300, "whole": 2.0,
          "neg_zero": -0.0, "big_int": 2**53 + 1, "text": "é\u2028\x01\"\\ ☃"}  # fmt: skip


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private ledger file and spool; no signing key; warnings re-armed."""
    ledger = tmp_path / "runs.ledger.jsonl"
    monkeypatch.setenv("GREENML_LEDGER", str(ledger))
    monkeypatch.setenv("GREENML_SPOOL_DIR", str(tmp_path / "spool"))
    monkeypatch.delenv("GREENML_LEDGER_KEY", raising=False)
    monkeypatch.setattr(hook, "_warned", set())
    return ledger


@pytest.fixture
def ledger(isolated: Path) -> Path:
    return isolated


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    with open_store(db_url) as s:
        yield s


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two key pairs: ``key``/``pub`` (the signer) and ``other_key``/``other_pub``."""
    folder = tmp_path_factory.mktemp("keys")
    key, pub, _ = generate_keypair(folder / "a")
    other_key, other_pub, _ = generate_keypair(folder / "b")
    return {"key": key, "pub": pub, "other_key": other_key, "other_pub": other_pub}


def payload(db: str, run_id: str, energy_j: float = 30.0) -> dict[str, Any]:
    """A spooled run as ``greenml run`` writes it (see tests/run/test_spool.py)."""
    energy = {
        "total_j": energy_j, "total_kwh": energy_j / 3.6e6, "uncertainty_rel": 0.3,
        "components": {"cpu": {"energy_j": energy_j, "method": "estimated", "uncertainty_rel": 0.3,
                               "devices": {"cpu0": {"energy_j": energy_j, "method": "estimated",
                                                    "uncertainty_rel": 0.3, "name": "CPU"}}}},
    }  # fmt: skip
    return {
        "version": 1,
        "db_url": resolve_url(db),
        "run": {"run_id": run_id, "name": "spooled", "command": ["true"], "tags": {"k": "v"},
                "started_at": 1.7e9 + 0.123456789, "pid": 999999, "hostname": None},
        "include_hostname": False,
        "cwd": None,
        "environment": {"python": {"version": "3.11.7"}},
        "measured_devices": {"cpu0": {"method": "estimated", "uncertainty_rel": 0.3}},
        "samples": [["cpu0", "cpu", 1.7e9 + i, 10.0 + i / 3, {"utilization": 0.5}]
                    for i in range(4)],
        "window": {"name": "run", "started_at": 1.7e9, "duration_s": 3.0, "energy": energy},
        "finish": {"status": "completed", "exit_code": 0, "duration_s": 3.0 + 1 / 3,
                   "ended_at": 1.7e9 + 3.3, "energy": {**energy, "notes": ["a note"]}},
        "extra": {"carbon": {"kg": energy_j / 3.6e6 * 0.4, "tricky": TRICKY}},
    }  # fmt: skip


def add_runs(store: Store, count: int, start: int = 0) -> list[str]:
    """Finish ``count`` runs through the spool ingest path (which ledgers them)."""
    ids = []
    for i in range(start, start + count):
        run_id = f"{i:012x}"
        ingest(store, payload(store.url, run_id, energy_j=30.0 + i))
        ids.append(run_id)
    return ids


def read(ledger: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in ledger.read_text().splitlines()]


def write(ledger: Path, entries: list[dict[str, Any]]) -> None:
    ledger.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in entries))
