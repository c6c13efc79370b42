"""Market-based carbon: declarations, the Scope 2 hierarchy, offsets kept apart, bad input."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from greenml.accounting.market import (
    NO_RESIDUAL_MIX,
    certificate,
    declaration,
    market_block,
    market_block_from_carbon,
    parse_certificate,
    provider_cfe,
)
from greenml.errors import ConfigError


def block(**kw: object) -> dict[str, object]:
    args: dict[str, object] = {"energy_kwh": 100.0, "location_kg": 40.0,
                               "location_source": "grid", "location_uncertainty_rel": 0.2,
                               "declared": None, "cfe": None}  # fmt: skip
    args.update(kw)
    return market_block(**args)  # type: ignore[arg-type]


def test_nothing_declared_falls_back_to_location_labelled() -> None:
    b = block()
    assert b["kg"] == pytest.approx(40.0)
    assert b["basis"] == "location-fallback"
    assert NO_RESIDUAL_MIX in b["notes"]  # type: ignore[operator]
    assert b["uncertainty_rel"] == pytest.approx(0.2)


def test_certificates_then_supplier_factor() -> None:
    declared = declaration(supplier_ci=200.0, certificates=["25%@2025:GO"])
    b = block(declared=declared)
    # 25 kWh at 0 g, 75 kWh at 200 g/kWh = 15 kg; the location factor is not used
    assert b["kg"] == pytest.approx(15.0)
    assert b["basis"] == "certificates+supplier"
    (cert,) = b["certificates"]  # type: ignore[misc]
    assert cert["vintage"] == 2025 and cert["kind"] == "GO" and cert["covered_kwh"] == 25.0


def test_provider_cfe_share_of_a_google_region() -> None:
    cfe = provider_cfe("gcp:us-central1", 2024)
    assert cfe is not None and cfe.year == 2024 and 0 < cfe.share < 1
    b = block(cfe=cfe)
    assert b["kg"] == pytest.approx(40.0 * (1 - cfe.share))
    assert "Google CFE" in b["parts"][0]["source"]  # type: ignore[index]
    later = provider_cfe("us-central1", 2031)  # newest published year, named in the source
    assert later is not None and later.year == 2024
    assert provider_cfe("aws:us-east-1") is None


def test_offsets_listed_never_subtracted(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(
        "[market]\nsupplier_g_per_kwh = 100\n"
        "[[market.certificates]]\nkwh = 10\nvintage = 2024\nkind = 'PPA'\n"
        "[[market.offsets]]\nkg = 500\nkind = 'forestry'\nvintage = 2023\n"
    )
    b = block(declared=declaration(market_file=path))
    assert b["kg"] == pytest.approx(9.0)  # 90 kWh × 100 g; the 500 kg offset is not taken off
    assert b["offsets_kg"] == 500 and "never subtracted" in str(b["offsets_note"])


def test_certificates_covering_more_than_used_refused() -> None:
    with pytest.raises(ConfigError, match="cover 150 kWh but the energy used is 100 kWh"):
        block(declared=declaration(certificates=["150kWh"]))
    with pytest.raises(ConfigError, match="at most 100 %"):
        declaration(certificates=["60%", "50%"])


def test_run_block_unknown_without_location_and_unavailable_never_zero() -> None:
    b = market_block_from_carbon({"kg": None, "status": "unknown", "hint": "no location"},
                                 None, None, 2025)  # fmt: skip
    assert b["kg"] is None and b["status"] == "unknown" and "no location" in str(b["hint"])


@pytest.mark.parametrize(
    "text", ["-5%", "150%", "abc", "40%@99", "1.5e400", "nan", "-1kWh", "40%@20255"]
)
def test_bad_certificates_one_line(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_certificate(text)
    assert "\n" not in str(info.value)


def test_bad_market_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    for body, message in (
        ("[market]\nsupplier_g_per_kwh = -3\n", "between 0 and 2000"),
        ("[market]\n[[market.certificates]]\nshare_pct = 120\n", "cannot exceed 100"),
        ("[market]\n[[market.offsets]]\nkg = 'x'\n", "kg must be a number"),
        ("x = 1\n", "no \\[market\\] table"),
        ("[market\n", "market file"),
    ):
        path.write_text(body)
        with pytest.raises(ConfigError, match=message):
            declaration(market_file=path)


@given(st.text(max_size=30))
def test_any_certificate_text_parses_or_fails_cleanly(text: str) -> None:
    try:
        cert = parse_certificate(text)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    assert (cert.share is None) != (cert.kwh is None)
    amount = cert.share if cert.share is not None else cert.kwh
    assert amount is not None and math.isfinite(amount) and amount >= 0
    assert cert.share is None or cert.share <= 1


@given(
    shares=st.lists(st.floats(-1, 2) | st.just(math.nan), max_size=4),
    supplier=st.none() | st.floats(-100, 3000) | st.sampled_from([math.nan, math.inf]),
    energy=st.floats(1e-6, 1e9),
)
def test_declared_shares_never_give_negative_or_silent_figures(
    shares: list[float], supplier: float | None, energy: float
) -> None:
    try:
        certs = [certificate(share=s) for s in shares]
        declared = declaration(supplier_ci=supplier, certificates=[f"{c.share}" for c in certs])
    except ConfigError:
        return
    b = block(energy_kwh=energy, location_kg=energy * 0.3, declared=declared)
    kg = b["kg"]
    assert isinstance(kg, float) and 0 <= kg <= energy * 2.0 + 1e-9


def toml_value(value: object) -> str:
    """A scalar as TOML writes it (JSON's string escapes are TOML's too)."""
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else repr(value)


_TOML_VALUES = st.one_of(
    st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6), st.booleans(),
)


@given(
    supplier=st.none() | _TOML_VALUES,
    certs=st.lists(st.dictionaries(st.sampled_from(["share_pct", "kwh", "vintage", "kind"]),
                                   _TOML_VALUES, max_size=4), max_size=3),
    offsets=st.lists(st.dictionaries(st.sampled_from(["kg", "kind", "vintage"]), _TOML_VALUES,
                                     max_size=3), max_size=2),
)  # fmt: skip
def test_any_market_file_reads_or_fails_in_one_line(
    supplier: object, certs: list[dict[str, object]], offsets: list[dict[str, object]]
) -> None:
    import tempfile

    lines = ["[market]"]
    if supplier is not None:
        lines.append(f"supplier_g_per_kwh = {toml_value(supplier)}")
    for name, items in (("certificates", certs), ("offsets", offsets)):
        for item in items:
            lines.append(f"[[market.{name}]]")
            lines += [f"{k} = {toml_value(v)}" for k, v in item.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as handle:
        handle.write("\n".join(lines) + "\n")
    try:
        declared = declaration(market_file=handle.name)
    except ConfigError as exc:
        assert "\n" not in str(exc)
        return
    finally:
        Path(handle.name).unlink()
    if declared is None:
        return
    b = block(declared=declared, energy_kwh=1e12)
    assert b["kg"] is None or b["kg"] >= 0  # type: ignore[operator]
