"""Attack (issue 11, the seed key): a SQLite data directory whose ``seed.key`` is gone (deleted
by mistake, or the directory restored from a backup that rightly kept the key apart) is served
again with the default ``--seed-key``. ``thirteen serve`` makes a brand-new key, says "created
the seed key file", and serves: every table already in the store committed its next seed under
the lost key, so every deal, reveal and escape there is refused from then on (SEED_KEY_MISSING),
the rounds in progress can never end and their players' wallets stay locked (R10.6).

The README says ``make run`` creates the key "on first start". A store that already holds
events is not a first start: serve should refuse (exit status 2, one line naming the missing
file, as it does for a ``--seed-key`` path that does not exist) instead of making a key that
cannot deal any of the store's tables."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc

from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc

SCRIPT = Path(sys.executable).parent / "thirteen"
BANNER = "serving gRPC on "


class Serve:
    """``thirteen serve`` on a SQLite store under ``data`` with the default seed key path."""

    def __init__(self, data: Path) -> None:
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def port(self) -> int | None:
        """The port once serving; None once the process has exited without serving."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            banner = next((x for x in list(self.lines) if BANNER in x), None)
            if banner is not None:
                return int(banner.split(BANNER)[1].split()[0].rsplit(":", 1)[1])
            if self.process.poll() is not None:
                time.sleep(0.2)  # let the reader take the last lines
                return None
            time.sleep(0.05)
        raise AssertionError(f"serve neither served nor exited within 20 s:\n{self.log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)


def test_a_store_with_tables_is_not_served_with_a_newly_made_seed_key(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Serve(data)
    try:
        port = first.port()
        assert port is not None, first.log
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            tables = table_pb2_grpc.TableServiceStub(channel)
            tables.OpenTable(table_pb2.OpenTableRequest(table_id="t1"), timeout=10)
    finally:
        first.stop()
    assert first.process.returncode == 0, first.log

    (data / "seed.key").unlink()  # lost, or never restored with the rest of the directory

    again = Serve(data)
    try:
        served = again.port()
    finally:
        again.stop()
    made = (data / "seed.key").exists()
    assert served is None, f"served the store with a new seed key:\n{again.log}"
    assert again.process.returncode == 2, again.log
    assert "Traceback" not in again.log
    assert not made, "a new seed key file was made for a store that already has tables"
