from __future__ import annotations

import csv
from importlib import resources
from pathlib import Path

import pytest

from greenml.hardware import (
    CpuMatch,
    cpu_count_logical,
    cpu_model_name,
    cpu_socket_count,
    cpu_tdp,
    normalize_cpu_name,
)


@pytest.mark.parametrize(
    ("cpuinfo_name", "matched", "tdp_w"),
    [
        ("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", "Intel Xeon Gold 6248", 150.0),
        ("AMD EPYC 7763 64-Core Processor", "AMD EPYC 7763", 280.0),
        ("Intel(R) Core(TM) i9-13900K", "Intel Core i9-13900K", 125.0),
        ("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", "Intel Core i7-8700", 65.0),
        ("Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", "Intel Xeon E5-2680 v4", 120.0),
        ("Intel(R) Xeon(R) CPU E5-2680 0 @ 2.70GHz", "Intel Xeon E5-2680", 130.0),
        ("Intel(R) Xeon(R) Platinum 8480+", "Intel Xeon Platinum 8480+", 350.0),
        ("AMD Ryzen 9 5950X 16-Core Processor", "AMD Ryzen 9 5950X", 105.0),
        ("AMD Ryzen 7 PRO 4750U with Radeon Graphics", "AMD Ryzen 7 PRO 4750U", 15.0),
        ("AMD FX(tm)-8350 Eight-Core Processor", "AMD FX-8350", 125.0),
        ("Intel(R) Core(TM)2 Duo CPU     E8400  @ 3.00GHz", "Intel Core 2 Duo E8400", 65.0),
    ],
)
def test_known_cpus_match_their_row(cpuinfo_name: str, matched: str, tdp_w: float) -> None:
    match = cpu_tdp(cpuinfo_name)
    assert isinstance(match, CpuMatch)
    assert match.matched_name == matched
    assert match.tdp_w == tdp_w
    assert match.query == cpuinfo_name
    assert 50 <= match.score <= 100
    assert match.source == "codecarbon-3.3.2"


@pytest.mark.parametrize(
    "generic",
    [
        "Intel(R) Xeon(R) Processor @ 2.80GHz",  # what a VM shows
        "Intel(R) Xeon(R) CPU @ 2.20GHz",
        "AMD EPYC Processor",
        "Common KVM processor",
        "QEMU Virtual CPU version 2.5+",
        "",
    ],
)
def test_generic_names_do_not_match(generic: str) -> None:
    assert cpu_tdp(generic) is None


def test_model_number_must_match_exactly() -> None:
    # 6248R is a different part (205 W) from the 6248 (150 W).
    r = cpu_tdp("Intel(R) Xeon(R) Gold 6248R CPU @ 3.00GHz")
    assert r is not None and (r.matched_name, r.tdp_w) == ("Intel Xeon Gold 6248R", 205.0)
    # A model number absent from the table never falls back to a neighbour.
    assert cpu_tdp("Intel(R) Xeon(R) Gold 6249 CPU @ 2.50GHz") is None
    assert cpu_tdp("Intel(R) Core(TM) i7-8701") is None
    # The version suffix is part of the model: v4 is not v2.
    v2 = cpu_tdp("Intel(R) Xeon(R) CPU E5-2680 v2 @ 2.80GHz")
    assert v2 is not None and v2.matched_name == "Intel Xeon E5-2680 v2"
    assert cpu_tdp("Intel(R) Xeon(R) CPU E5-2680 v9 @ 2.80GHz") is None


def test_vendor_must_agree() -> None:
    assert cpu_tdp("Intel Ryzen 9 5950X") is None


def test_family_word_missing_still_matches_on_model_number() -> None:
    match = cpu_tdp("Intel Xeon 6248")
    assert match is not None and match.matched_name == "Intel Xeon Gold 6248"
    assert match.score < 100


def test_normalize_strips_marketing_noise() -> None:
    assert normalize_cpu_name("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz") == "intel xeon gold 6248"
    assert normalize_cpu_name("AMD EPYC 7763 64-Core Processor") == "amd epyc 7763"
    assert normalize_cpu_name("13th Gen Intel(R) Core(TM) i7-1365U") == "intel core i7-1365u"


def test_packaged_table_is_clean_and_small() -> None:
    path = resources.files("greenml") / "data" / "cpu_tdp.csv"
    text = path.read_text(encoding="utf-8")
    assert len(text.encode()) < 300_000
    rows = list(csv.DictReader(text.splitlines()))
    assert rows and set(rows[0]) == {"name", "tdp_w", "source"}
    names = [r["name"].lower() for r in rows]
    assert len(names) == len(set(names))
    for r in rows:
        assert float(r["tdp_w"]) > 0
        assert r["name"] == r["name"].strip() and "\u00a0" not in r["name"]


CPUINFO_2_SOCKETS = """\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz
physical id\t: 0

processor\t: 1
model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz
physical id\t: 1

processor\t: 2
model name\t: Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz
physical id\t: 0
"""


def test_cpuinfo_model_name_and_sockets(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(CPUINFO_2_SOCKETS)
    assert cpu_model_name(info) == "Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz"
    assert cpu_socket_count(info) == 2


def test_cpuinfo_without_physical_id_is_one_socket(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Apple M1\n")
    assert cpu_socket_count(info) == 1
    assert cpu_socket_count(tmp_path / "missing") == 1


def test_logical_cores_positive() -> None:
    assert cpu_count_logical() >= 1
    assert isinstance(cpu_model_name(), str)
