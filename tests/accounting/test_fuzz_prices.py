"""Fuzz: any text is a price trace or one ConfigError (Hypothesis)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from greenml.accounting.cost import PriceTrace
from greenml.errors import ConfigError

HEADER = "Datetime (UTC),Datetime (Local),Price (USD/MWh)\n"
ROWS = st.lists(
    st.tuples(
        st.one_of(st.datetimes().map(lambda d: d.isoformat()), st.text(max_size=12)),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.text(max_size=8)),
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(header=st.sampled_from([HEADER, "", "a,b\n", HEADER.upper()]), rows=ROWS)
def test_any_price_file_reads_or_fails_with_one_line(
    header: str, rows: list[tuple[str, str]]
) -> None:
    text = header + "".join(f"{t},{t},{p}\n" for t, p in rows)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "prices.csv"
        path.write_text(text, encoding="utf-8")
        try:
            trace = PriceTrace.from_csv(path)
        except ConfigError as exc:
            assert "\n" not in str(exc)
            return
    values = list(trace.series.values)
    assert values and all(math.isfinite(v) for v in values)
