"""The real ``thirteen`` console script of this environment, run to completion: how the tests
call the command line, as a user does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

SCRIPT = shutil.which("thirteen", path=str(Path(sys.executable).parent))
FIXED_PORT = (
    "a test runs `thirteen serve` on the default port 50051, which anything else on this machine "
    "may hold: give it --address 127.0.0.1:0"
)


def thirteen(
    *args: str | Path,
    stdin: str = "",
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``thirteen ARGS`` with ``stdin``, on the SQLite store unless ``env`` names another (it is
    laid over this process's environment). A ``serve`` must name its ``--address``: no test may
    depend on a fixed port."""
    if SCRIPT is None:
        pytest.fail("the thirteen console script is not installed: run make setup")
    words = [str(arg) for arg in args]
    if words[:1] == ["serve"] and not any(w.split("=")[0] == "--address" for w in words):
        pytest.fail(FIXED_PORT)
    return subprocess.run(
        [SCRIPT, *words],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
        check=False,
        env={**os.environ, "THIRTEEN_STORE": "sqlite", **(env or {})},
    )
