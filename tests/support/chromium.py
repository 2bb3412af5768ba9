"""A page drawn by a real browser: Debian's headless ``chromium`` takes a PNG screenshot of a
file. The tests that use it skip when chromium is not installed, and fail instead under
``THIRTEEN_REQUIRE_CHROMIUM=1`` (``make report-check``, which installs it)."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

import pytest

HEADLESS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Chromium headless as root on a machine without a network: no sandbox, no GPU, and none of
its own connections (refused here, many at a time, without these)."""


def screenshot(page: Path, shot: Path, width: int, height: int) -> bytes:
    """``page`` drawn in a ``width`` × ``height`` window, as PNG bytes also written to
    ``shot``; checked to be a PNG of that size."""
    browser = shutil.which("chromium")
    if browser is None:
        if os.environ.get("THIRTEEN_REQUIRE_CHROMIUM") == "1":
            pytest.fail("THIRTEEN_REQUIRE_CHROMIUM=1 but chromium is not installed")
        pytest.skip("chromium is not installed (make report-check installs it)")
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                browser,
                *HEADLESS,
                f"--user-data-dir={profile}",
                f"--screenshot={shot}",
                f"--window-size={width},{height}",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", data[16:24]) == (width, height)
    return data


def png_pixels(data: bytes) -> bytes:
    """The raw (still filtered) scanlines of a PNG: enough to tell a drawing from a fill."""
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind = data[at + 4 : at + 8]
        if kind == b"IDAT":
            chunks.append(data[at + 8 : at + 8 + length])
        at += 12 + length
    return zlib.decompress(b"".join(chunks))
