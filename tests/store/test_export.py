"""JSON and CSV export formats."""

from __future__ import annotations

import csv
import io
import json

from greenml.measure.measurement import Sample
from greenml.store.export import CSV_COLUMNS, record_to_json, samples_to_csv
from greenml.store.repository import Store
from tests.store.conftest import make_measurement


def test_record_to_json_keeps_order_and_unicode(store: Store) -> None:
    run_id = store.create_run(
        name="entraînement-μ", command=["python", "t.py"], tags={"équipe": "vision"},
        started_at=1_700_000_000.0, pid=1, hostname="elsewhere",
    )  # fmt: skip
    store.finish_run(
        run_id, status="completed", exit_code=0, duration_s=2.0,
        energy=make_measurement().to_dict(), ended_at=1_700_000_002.0,
    )  # fmt: skip
    record = store.get_record(run_id)
    text = record_to_json(record)
    assert "entraînement-μ" in text and "équipe" in text
    assert text.startswith('{\n  "id": ')
    assert json.loads(text) == record
    assert list(json.loads(text)) == list(record)


def test_samples_to_csv(store: Store) -> None:
    run_id = store.create_run(name=None, command=[], tags={}, started_at=0.0, pid=1, hostname=None)
    store.add_samples(
        run_id,
        [
            Sample("gpu0", "gpu", 1_700_000_001.5, 300.25, {"utilization": 0.97, "foo": 2.0}),
            Sample("cpu0", "cpu", 1_700_000_000.0, None, {"memory_used_bytes": 1.5e9}),
        ],
    )
    buf = io.StringIO()
    samples_to_csv(store.samples(run_id), buf)
    lines = buf.getvalue().splitlines()
    assert lines[0] == (
        "time_utc,device,component,power_w,utilization,sm_activity,memory_used_bytes,sm_clock_mhz"
    )
    assert ",".join(CSV_COLUMNS) == lines[0]
    rows = list(csv.DictReader(io.StringIO(buf.getvalue())))
    assert rows[0] == {
        "time_utc": "2023-11-14T22:13:20+00:00", "device": "cpu0", "component": "cpu",
        "power_w": "", "utilization": "", "sm_activity": "", "memory_used_bytes": "1500000000.0",
        "sm_clock_mhz": "",
    }  # fmt: skip
    assert rows[1]["time_utc"] == "2023-11-14T22:13:21.500000+00:00"
    assert rows[1]["power_w"] == "300.25" and rows[1]["utilization"] == "0.97"


def test_empty_samples_csv_has_header_only() -> None:
    buf = io.StringIO()
    samples_to_csv([], buf)
    assert buf.getvalue() == ",".join(CSV_COLUMNS) + "\n"


def test_every_json_greenml_writes_is_valid_json_nan_and_infinity_become_null() -> None:
    import json

    from greenml.store.export import json_text, record_to_json

    data = {"a": float("nan"), "b": [1.0, float("inf"), {"c": -float("inf")}], "d": (2.5,)}
    text = json_text(data)

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    assert json.loads(text, parse_constant=refuse) == {"a": None, "b": [1.0, None, {"c": None}],
                                                       "d": [2.5]}  # fmt: skip
    assert json.loads(record_to_json({"id": "x", "e": float("nan")}), parse_constant=refuse)
