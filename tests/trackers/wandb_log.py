"""Read an offline W&B run file (``run-ID.wandb``) back: its history rows and summary.

The file is a LevelDB-style log: a 7-byte header (``:W&B``, magic, version), then
32 KiB blocks of records, each with a 7-byte header (CRC32, length, type: 1 full,
2 first, 3 middle, 4 last); every record is a protobuf ``wandb_internal.Record``.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

BLOCK = 32 * 1024
HEADER = 7


def records(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", "not a W&B run file"
    out: list[bytes] = []
    pos, pending = HEADER, b""
    while pos + HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < HEADER:  # the block's tail is padding
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + HEADER])
        chunk = data[pos + HEADER : pos + HEADER + length]
        pos += HEADER + length
        if kind == 0 and length == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            out.append(pending)
            pending = b""
    return out


def history_and_summary(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The logged rows (in order) and the final summary of a run file."""
    from wandb.proto import wandb_internal_pb2 as pb

    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for raw in records(path):
        record = pb.Record()
        record.ParseFromString(raw)
        kind = record.WhichOneof("record_type")
        if kind == "history":
            rows.append({_key(i): json.loads(i.value_json) for i in record.history.item})
        elif kind == "summary":
            summary.update({_key(i): json.loads(i.value_json) for i in record.summary.update})
    return rows, summary


def _key(item: Any) -> str:
    return str(item.key or "/".join(item.nested_key))
