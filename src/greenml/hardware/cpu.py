"""CPU model name → TDP of one socket (GPUs live in ``greenml.hardware.gpu``).

The CPU table (``data/cpu_tdp.csv``) is derived from CodeCarbon's
``cpu_power.csv`` (MIT); see ``data/SOURCES.md``. Names from ``/proc/cpuinfo``
are normalized, then matched in two steps:

1. the *model tokens* (``6248``, ``7763``, ``i9-13900k``, ``e5-2680`` plus a
   version such as ``v4``) must be identical — a ``Xeon Gold 6248`` never
   matches a ``Xeon Gold 6248R``, and a name with no model number (what a VM
   shows: ``Intel(R) Xeon(R) Processor @ 2.80GHz``) only matches an identical
   name, so it usually returns ``None`` rather than a random Xeon;
2. among the rows with those tokens and the same vendor, rapidfuzz ranks the
   rest of the name (family words such as ``Gold``, ``PRO``).

Lazy imports: psutil (~30 ms) and rapidfuzz (~50 ms) are imported inside the functions
that use them, so importing this module stays cheap.
"""

from __future__ import annotations

import csv
import functools
import os
import platform
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from greenml.data import packaged

CPUINFO = "/proc/cpuinfo"
_MIN_SCORE = 50.0  # rapidfuzz token_sort_ratio once the model tokens agree

# Removed from names before matching (lower-cased input).
_NOISE = [
    r"@.*$",  # "@ 2.50GHz" and anything after it
    r"\b\d+(?:\.\d+)?\s*[gm]hz\b",
    r"\b(?:with\b|w/).*$",  # "with Radeon Graphics"
    r"\bradeon\b.*$",  # "A10-7850K Radeon R7, 12 Compute Cores 4C+8G"
    r"\b(?:\d+|dual|triple|quad|six|eight|ten|twelve|sixteen)[- ]cores?\b",
    r"\b\d+(?:st|nd|rd|th) gen(?:eration)?\b",
    r"\b(?:cpu|processor|apu|genuine)\b",
]
_NOISE_RE = re.compile("|".join(_NOISE))
_VENDORS = ("intel", "amd", "apple", "arm")


@dataclass(frozen=True)
class CpuMatch:
    """A CPU model name matched against the TDP table.

    Attributes:
        query: The name as given.
        matched_name: The table row that matched.
        tdp_w: Thermal design power of one socket, in watts.
        score: Match quality, 0–100 (100: same normalized name).
        source: Where the row comes from (see ``data/SOURCES.md``).
    """

    query: str
    matched_name: str
    tdp_w: float
    score: float
    source: str


@dataclass(frozen=True)
class _Row:
    name: str
    norm: str
    tdp_w: float
    source: str


def normalize_cpu_name(name: str) -> str:
    """Lower-case ``name`` and strip marketing noise (``(R)``, ``CPU``, ``@ 2.5GHz`` …)."""
    text = name.lower().replace("\u00a0", " ")
    text = re.sub(r"\bcore\(tm\)(\d)", r"core \1", text)  # "Core(TM)2 Duo" → "core 2 duo"
    text = re.sub(r"\((?:r|tm|c)\)|[®™]", "", text)  # "FX(tm)-8350" → "fx-8350"
    text = _NOISE_RE.sub(" ", text)
    text = re.sub(r"[(),]", " ", text)
    return " ".join(text.split())


def _is_model_token(token: str) -> bool:
    if re.fullmatch(r"v\d+", token):  # "v4" in "E5-2680 v4"
        return True
    alnum = re.sub(r"[^a-z0-9]", "", token)
    return len(alnum) >= 3 and any(c.isdigit() for c in alnum)


def _model_tokens(norm: str) -> frozenset[str]:
    return frozenset(t for t in norm.split() if _is_model_token(t))


def _vendor(norm: str) -> str | None:
    words = norm.split()
    return next((v for v in _VENDORS if v in words), None)


_DIGITS3 = re.compile(r"\d{3}")


@functools.cache
def _table_lines() -> tuple[str, ...]:
    """The packaged table's data lines, unparsed (parsing all 4,700 rows is slow)."""
    return tuple(_table_lines_text().splitlines()[1:])


@functools.cache
def _table_lines_text() -> str:
    return packaged("cpu_tdp.csv").read_text(encoding="utf-8")


@functools.cache
def _lowered_lines() -> tuple[str, ...]:
    """:func:`_table_lines` in lower case, made once (not once per line and word)."""
    return tuple(_table_lines_text().lower().splitlines()[1:])


def _candidates(norm: str, tokens: frozenset[str]) -> list[_Row]:
    """Rows that could match, parsed and normalized; a substring filter runs first.

    Normalizing the whole table costs ~0.2 s on a small machine; model numbers
    survive normalization unchanged, so a matching line contains their digits.
    """
    if tokens:
        digits = [run for token in tokens for run in re.findall(r"\d+", token)]
        lines = [line for line in _table_lines() if all(d in line for d in digits)]
    else:
        # A name without a model number only matches a row without one either
        # (three digits in a row always make a model token).
        table, lowered = _table_lines(), _lowered_lines()
        rows: Sequence[int] = range(len(table))
        for word in norm.split():  # one plain scan per word: no generator per line
            rows = [i for i in rows if word in lowered[i]]
        lines = [table[i] for i in rows if not _DIGITS3.search(table[i].split(",", 1)[0])]
    return [
        _Row(name, normalize_cpu_name(name), float(tdp), source)
        for name, tdp, source in csv.reader(lines)
    ]


@functools.lru_cache(maxsize=64)
def cpu_tdp(model_name: str) -> CpuMatch | None:
    """Look up the TDP of one socket of a CPU model.

    Args:
        model_name: A name as ``/proc/cpuinfo`` shows it, e.g.
            ``Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz``.

    Returns:
        The best match, or ``None`` when no row has the same model number
        (or, for a name without one, the same normalized name).
    """
    norm = normalize_cpu_name(model_name)
    if not norm:
        return None
    tokens = _model_tokens(norm)
    rows = _candidates(norm, tokens)
    exact = next((r for r in rows if r.norm == norm), None)
    if exact is not None:
        return CpuMatch(model_name, exact.name, exact.tdp_w, 100.0, exact.source)
    if not tokens:
        return None
    vendor = _vendor(norm)
    candidates = [
        r
        for r in rows
        if _model_tokens(r.norm) == tokens and (vendor is None or _vendor(r.norm) in (None, vendor))
    ]
    if not candidates:
        return None
    from rapidfuzz import fuzz, process

    best = process.extractOne(
        norm, [r.norm for r in candidates], scorer=fuzz.token_sort_ratio, score_cutoff=_MIN_SCORE
    )
    if best is None:
        return None
    row = candidates[best[2]]
    return CpuMatch(model_name, row.name, row.tdp_w, float(best[1]), row.source)


def _cpuinfo_values(key: str, path: str | Path) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        name, sep, value = line.partition(":")
        if sep and name.strip() == key:
            out.append(value.strip())
    return out


def cpu_model_name(cpuinfo: str | Path = CPUINFO) -> str:
    """The CPU model name (``model name`` in /proc/cpuinfo), ``""`` if unknown."""
    names = _cpuinfo_values("model name", cpuinfo)
    if names and names[0]:
        return names[0]
    return platform.processor() or ""


def cpu_socket_count(cpuinfo: str | Path = CPUINFO) -> int:
    """Number of CPU sockets (distinct ``physical id`` values), at least 1."""
    return max(1, len(set(_cpuinfo_values("physical id", cpuinfo))))


def cpu_count_logical() -> int:
    """Logical CPUs of the machine (hardware threads), at least 1."""
    import psutil

    return int(psutil.cpu_count(logical=True) or os.cpu_count() or 1)
