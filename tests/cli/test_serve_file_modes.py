"""Files only the service can read (issue 22, finding 7): the real ``thirteen serve`` under umask
022 creates every store file owner-only (the SQLite files and their WAL, the lock files, the
keys), and says so, on stderr and in its log, when the data directory or a store file it finds
may be read by others."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from service._generated.thirteen.v1 import wallet_pb2, wallet_pb2_grpc

SCRIPT = Path(sys.executable).parent / "thirteen"
BANNER = "thirteen: serving gRPC on "


def modes(directory: Path) -> dict[str, int]:
    """The permission bits of ``directory`` and of everything under it, by relative path."""
    found = {".": stat.S_IMODE(directory.stat().st_mode)}
    for path in directory.rglob("*"):
        found[str(path.relative_to(directory))] = stat.S_IMODE(path.lstat().st_mode)
    return found


class Served:
    """``thirteen serve --data DATA`` under umask 022 until ``stop``; ``while_serving`` is what
    the data directory held once it served and had stored a credit."""

    def __init__(self, data: Path) -> None:
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
            umask=0o022,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(
            target=lambda: self.lines.extend(self.process.stderr or ()), daemon=True
        )
        self._reader.start()
        deadline = time.monotonic() + 60
        while not any(BANNER in line for line in self.lines):
            assert time.monotonic() < deadline and self.process.poll() is None, self.stderr
            time.sleep(0.05)
        banner = next(line for line in self.lines if BANNER in line)
        address = banner.split(BANNER)[1].split()[0]
        with grpc.insecure_channel(address) as channel:
            wallets = wallet_pb2_grpc.WalletServiceStub(channel)
            credit = wallet_pb2.CreditRequest(player_id="A", amount=100, transfer_id="t1")
            wallets.Credit(credit, timeout=30)
        self.while_serving = modes(data)

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=60) == 0, self.stderr
        self._reader.join(timeout=5)

    def human_lines(self) -> list[str]:
        return [line for line in self.lines if line.startswith("thirteen serve: ")]

    def logged(self, event: str) -> list[dict[str, Any]]:
        found = []
        for line in self.lines:
            if line.startswith("{"):
                entry = json.loads(line)
                if entry.get("event") == event:
                    found.append(entry)
        return found


def owner_only(found: dict[str, int]) -> dict[str, str]:
    """What in ``found`` others than the owner may read, write or enter (besides ``.``)."""
    return {path: oct(mode) for path, mode in found.items() if path != "." and mode & 0o077}


def test_under_umask_022_an_existing_0755_data_directory_is_warned_and_its_files_owner_only(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    served = Served(data)
    try:
        assert {"thirteen.sqlite", "views.sqlite", "serve.lock", "views.lock"} <= set(
            served.while_serving
        )
        assert any(path.endswith("-wal") for path in served.while_serving)
        assert owner_only(served.while_serving) == {}
    finally:
        served.stop()
    assert owner_only(modes(data)) == {}
    assert stat.S_IMODE(data.stat().st_mode) == 0o755  # warned about, not changed behind the back
    (line,) = [line for line in served.human_lines() if "other users" in line]
    assert str(data) in line and "0o755" in line and f"chmod 700 {data}" in line
    (logged,) = served.logged("data_open_to_others")
    assert logged["level"] == "warning"
    assert logged["paths"] == {str(data): "0o755"}


def test_a_store_file_others_may_read_is_warned_about_at_the_next_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Served(data)
    first.stop()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700  # a new directory: owner-only
    assert not [line for line in first.human_lines() if "other users" in line]
    assert first.logged("data_open_to_others") == []
    (data / "thirteen.sqlite").chmod(0o644)  # as an earlier version left it
    second = Served(data)
    second.stop()
    (line,) = [line for line in second.human_lines() if "other users" in line]
    assert str(data / "thirteen.sqlite") in line and "chmod 600" in line
    (logged,) = second.logged("data_open_to_others")
    assert logged["paths"] == {str(data / "thirteen.sqlite"): "0o644"}
