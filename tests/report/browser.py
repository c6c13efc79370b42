"""Headless Chromium for the HTML report tests: dump the rendered DOM, take a screenshot.

Chromium runs offline with a throw-away profile; its console messages come on
stderr (``--enable-logging=stderr``) as ``...:CONSOLE:<line>] "message", source: ...``.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
    "--enable-logging=stderr",
    "--v=0",
)
INSTALL_HINT = "`make test` installs it (Debian package chromium)"


def find_chromium() -> str:
    """The Chromium binary; fails under CI (``CI=true``) when missing, skips elsewhere."""
    for name in (os.environ.get("GREENML_TEST_CHROMIUM", ""), "chromium", "chromium-browser"):
        found = shutil.which(name) if name else None
        if found:
            return found
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"chromium is not installed and CI=true: {INSTALL_HINT}")
    pytest.skip(f"chromium is not installed: {INSTALL_HINT}")


@dataclass(frozen=True)
class Rendered:
    """What Chromium made of a page."""

    dom: str
    console: list[str]


def dump_dom(chromium: str, page: Path, profile: Path) -> Rendered:
    """The DOM after the page loaded (scripts, if any, have run) and its console messages."""
    done = _run(chromium, page, profile, "--dump-dom")
    return Rendered(done.stdout, console_messages(done.stderr))


def screenshot(chromium: str, page: Path, profile: Path, png: Path, size: str) -> None:
    """A PNG of the page's first ``size`` (``WIDTH,HEIGHT``) pixels."""
    _run(chromium, page, profile, f"--window-size={size}", f"--screenshot={png}")
    assert png.exists(), "chromium wrote no screenshot"


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _run(chromium: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [chromium, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit RGB or RGBA PNG, alpha dropped."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", (0, 0, 0, 0, 0)
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)[:5]
        elif kind == b"IDAT":
            idat += body
    width, height, depth, color_type, _ = header
    assert depth == 8 and color_type in (2, 6), f"unsupported PNG {header}"
    bpp = 3 if color_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prior = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        row = _unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), prior, bpp)
        rgb = row if bpp == 3 else bytes(b for i, b in enumerate(row) if i % 4 != 3)
        rows.append(bytes(rgb))
        prior = row
    return width, height, rows


def _unfilter(kind: int, row: bytearray, prior: bytearray, bpp: int) -> bytearray:
    if kind == 1:
        for i in range(bpp, len(row)):
            row[i] = (row[i] + row[i - bpp]) & 0xFF
    elif kind == 2:
        row = bytearray((a + b) & 0xFF for a, b in zip(row, prior, strict=True))
    elif kind == 3:
        for i in range(len(row)):
            left = row[i - bpp] if i >= bpp else 0
            row[i] = (row[i] + ((left + prior[i]) >> 1)) & 0xFF
    elif kind == 4:
        for i in range(len(row)):
            a = row[i - bpp] if i >= bpp else 0
            b, c = prior[i], prior[i - bpp] if i >= bpp else 0
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            row[i] = (row[i] + pred) & 0xFF
    return row
