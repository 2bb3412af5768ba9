"""A SQLite store is served by one process (README, Storage): its writer trusts the aggregates
it holds and the log readers take its own commits from memory. A second server started on the
same data directory must refuse to start rather than answer from stale aggregates (observed
before the lock: it started, and a SitDown on the first answered "seated" after the second stood
the player up, storing nothing). Issue 10."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.eventstore.storage import StoreInUse
from tests.support.clock import ManualClock
from tests.support.server import ServerThread

SCRIPT = Path(sys.executable).parent / "thirteen"


def test_a_second_server_on_one_sqlite_store_refuses_to_start(tmp_path: Path) -> None:
    environ = {"THIRTEEN_STORE": "sqlite"}
    first = ServerThread(tmp_path / "data", environ, ManualClock())
    try:
        with pytest.raises(StoreInUse, match="another thirteen serve is serving"):
            ServerThread(tmp_path / "data", environ, ManualClock())
        second = subprocess.run(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path / "data")],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, **environ},
        )
        assert second.returncode == 1
        assert "another thirteen serve is serving" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.stop()
    again = ServerThread(tmp_path / "data", environ, ManualClock())  # the lock went with it
    again.stop()
