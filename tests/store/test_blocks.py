"""Sample blocks give the same columns as the rows they summarize."""

from __future__ import annotations

import math

import numpy as np

from greenml.measure.measurement import Sample
from greenml.store.blocks import pack_blocks, unpack_blocks
from greenml.store.repository import Store
from greenml.store.schema import sample_blocks


def test_blocks_and_rows_give_the_same_columns(store: Store) -> None:
    run = store.create_run(name="b", command=["x"], tags={}, started_at=0.0, pid=1, hostname=None)
    first = [
        Sample("gpu1", "gpu", 2.0, 300.0, {"sm_activity": 0.5}),
        Sample("gpu0", "gpu", 1.0, None, {"utilization": 1.0, "memory_used_bytes": 3e9}),
    ]
    second = [Sample("cpu0", "cpu", 1.5, 20.0, {"utilization": 0.25})]  # fmt: skip
    store.add_samples(run, first)
    store.add_samples(run, second)
    from_blocks = store.sample_columns(run)
    with store._write("drop blocks") as conn:  # the path of runs stored before blocks
        conn.execute(sample_blocks.delete())
    from_rows = store.sample_columns(run)
    assert list(from_blocks["time_s"]) == [1.0, 1.5, 2.0]
    for name in ("time_s", "power_w", "utilization", "sm_activity", "memory_used_bytes"):
        assert np.array_equal(from_blocks[name], from_rows[name], equal_nan=True), name
    names = [from_blocks["devices"][i] for i in from_blocks["device"]]
    assert (
        names == [from_rows["devices"][i] for i in from_rows["device"]] == ["gpu0", "cpu0", "gpu1"]
    )
    assert math.isnan(from_blocks["power_w"][0])  # a missing reading stays missing


def test_packing_round_trips_without_a_store() -> None:
    items = [Sample("gpu0", "gpu", float(t), 100.0 + t, {"sm_clock_mhz": 1400.0}) for t in range(5)]
    (block,) = pack_blocks("r", items)
    assert block["count"] == 5
    columns = unpack_blocks([(block["device"], block["component"], block["count"], block["data"])])
    assert list(columns["power_w"]) == [100.0, 101.0, 102.0, 103.0, 104.0]
    assert list(columns["sm_clock_mhz"]) == [1400.0] * 5
