"""Reading a run's samples back: as dicts (rows, or packed blocks of an uploaded run) and
as numpy columns (one query, no per-row dicts: fast enough for millions of samples).

Runs stored since schema 2 keep their samples packed in ``sample_blocks``; older runs
(and the recorder while a run is live) keep one row each in ``samples``.

Lazy imports: numpy, only for the columns.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from greenml.store.blocks import unpack_blocks
from greenml.store.rows import METRIC_COLUMNS, sample_dict
from greenml.store.schema import sample_blocks, samples

NAMES = ("time_s", "power_w", *METRIC_COLUMNS)


def sample_rows(conn: Connection, run_id: str) -> list[Any]:
    """The run's rows of ``samples`` ordered by time (mappings, as stored)."""
    query = select(samples).where(samples.c.run_id == run_id)
    return list(conn.execute(query.order_by(samples.c.t, samples.c.id)).mappings())


def sample_dicts(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    """The run's samples ordered by time: ``time_s``, ``device``, ``component``,
    ``power_w``, the metric columns, and ``extra`` (other metrics, a dict)."""
    rows = sample_rows(conn, run_id)
    if rows:
        return [sample_dict(r) for r in rows]
    return _from_blocks(conn, run_id)  # a run uploaded to a team server: packed only


def sample_columns(conn: Connection, run_id: str) -> dict[str, Any]:
    """The run's samples ordered by time as numpy columns.

    Returns ``time_s``, ``power_w`` and the metric columns as ``float64``
    arrays (``nan`` where null), ``device`` and ``component`` as ``int32``
    codes into the lists ``devices`` and ``components``. ``extra`` is left out.
    """
    blocks = _blocks(conn, run_id)
    if blocks:  # runs stored since schema 2: no per-row work at all
        return unpack_blocks(blocks)
    groups, parse = _row_groups(conn, run_id)
    return _columns(groups, parse)


def _blocks(conn: Connection, run_id: str) -> list[tuple[str, str, int, bytes]]:
    rows = conn.execute(
        select(sample_blocks.c.device, sample_blocks.c.component,
               sample_blocks.c.count, sample_blocks.c.data)
        .where(sample_blocks.c.run_id == run_id)
    ).all()  # fmt: skip
    return [(r[0], r[1], int(r[2]), bytes(r[3])) for r in rows]


def _from_blocks(conn: Connection, run_id: str) -> list[dict[str, Any]]:
    blocks = _blocks(conn, run_id)
    if not blocks:
        return []
    cols = unpack_blocks(blocks)
    values = {n: [None if v != v else v for v in cols[n].tolist()] for n in NAMES}
    out = []
    for i in range(len(cols["time_s"])):
        item: dict[str, Any] = {
            "device": cols["devices"][int(cols["device"][i])],
            "component": cols["components"][int(cols["component"][i])],
        }
        item.update((n, values[n][i]) for n in NAMES)
        item["extra"] = {}
        out.append(item)
    return out


def _row_groups(conn: Connection, run_id: str) -> tuple[list[Any], Any]:
    """Per (device, component): its count and each column's values, and how to parse them."""
    import numpy as np

    if conn.dialect.name == "sqlite":
        # One grouped SELECT; SQLite formats the floats in C, numpy parses them.
        aggs = ", ".join(
            f"group_concat(coalesce({c}, 'nan'))" for c in ("t", "power_w", *METRIC_COLUMNS)
        )
        sql = (
            f"SELECT device, component, count(*), {aggs} FROM (SELECT * FROM samples "
            "WHERE run_id = ? ORDER BY t, id) GROUP BY device, component"
        )
        groups: list[Any] = list(conn.exec_driver_sql(sql, (run_id,)).all())
        return groups, lambda text: np.array(text.split(","), dtype=np.float64)
    cols = [samples.c[c] for c in ("t", "power_w", *METRIC_COLUMNS)]
    query = select(samples.c.device, samples.c.component, *cols).where(samples.c.run_id == run_id)
    rows = conn.execute(query.order_by(samples.c.t, samples.c.id)).all()
    by_dev: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        by_dev.setdefault((row[0], row[1]), []).append(row[2:])
    groups = [(d, c, len(v), *zip(*v, strict=True)) for (d, c), v in by_dev.items()]
    return groups, lambda values: np.array(values, dtype=np.float64)


def _columns(groups: list[Any], parse: Any) -> dict[str, Any]:
    import numpy as np

    out: dict[str, Any] = {"devices": [], "components": []}
    parts: dict[str, list[Any]] = {n: [] for n in (*NAMES, "device", "component")}
    for code, group in enumerate(groups):
        device, component, count = group[0], group[1], int(group[2])
        out["devices"].append(device)
        if component not in out["components"]:
            out["components"].append(component)
        parts["device"].append(np.full(count, code, dtype=np.int32))
        comp_code = out["components"].index(component)
        parts["component"].append(np.full(count, comp_code, dtype=np.int32))
        for name, text in zip(NAMES, group[3:], strict=True):
            parts[name].append(parse(text))
    for name, chunks in parts.items():
        dtype = np.int32 if name in ("device", "component") else np.float64
        out[name] = np.concatenate(chunks) if chunks else np.array([], dtype=dtype)
    order = np.argsort(out["time_s"], kind="stable")
    for name in parts:
        out[name] = out[name][order]
    return out
