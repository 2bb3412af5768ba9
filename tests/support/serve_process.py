"""``thirteen serve`` in a process of its own on a free port, with stubs for its services: for
tests that kill it (SIGKILL), restart it, or run it beside other processes (a witness)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import grpc

from service._generated.thirteen.v1 import (
    audit_pb2_grpc,
    table_pb2_grpc,
    transparency_pb2_grpc,
    wallet_pb2_grpc,
)
from tests.e2e.helpers import wait_until
from tests.support.seed_key import ensure_log_key, ensure_seed_key

SCRIPT = shutil.which("thirteen", path=str(Path(sys.executable).parent))
SQLITE = {"THIRTEEN_STORE": "sqlite"}


class ServeProcess:
    """``thirteen serve --data DATA *extra`` on the store ``environ`` selects (SQLite when
    None), reached over ``credentials`` (plaintext when None)."""

    def __init__(
        self,
        data: Path,
        *extra: str,
        environ: dict[str, str] | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        make_keys: bool = True,
    ) -> None:
        if make_keys:  # False: serve finds the keys there are, or makes or refuses them
            ensure_seed_key(data / "seed.key")
            ensure_log_key(data, extra, environ or SQLITE)
        self.data = data
        self.environ = dict(environ or SQLITE)
        self.process = subprocess.Popen(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data), *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(environ or SQLITE)},
        )
        self.lines: list[str] = []
        port: list[int] = []

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                self.lines.append(line)
                if "serving gRPC on" in line and not port:
                    port.append(int(line.split("serving gRPC on ")[1].split()[0].rsplit(":", 1)[1]))

        threading.Thread(target=read, daemon=True).start()
        wait_until(lambda: port or self.process.poll() is not None, "thirteen serve to start", 60)
        assert port, "".join(self.lines[-20:])
        self.address = f"127.0.0.1:{port[0]}"
        self.channel = (
            grpc.insecure_channel(self.address)
            if credentials is None
            else grpc.secure_channel(self.address, credentials)
        )
        self.wallets = wallet_pb2_grpc.WalletServiceStub(self.channel)
        self.tables = table_pb2_grpc.TableServiceStub(self.channel)
        self.audit = audit_pb2_grpc.AuditServiceStub(self.channel)
        self.transparency = transparency_pb2_grpc.TransparencyServiceStub(self.channel)

    def stored_events(self) -> int:
        """How many events its store holds now (read beside it, not through the server)."""
        if self.environ.get("THIRTEEN_STORE", "sqlite") == "sqlite":
            uri = f"file:{self.data / 'thirteen.sqlite'}?mode=ro"
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
                return int(db.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0])
        import psycopg

        schema = self.environ.get("POSTGRES_SCHEMA") or "public"
        with psycopg.connect(
            host=self.environ.get("POSTGRES_HOST", "127.0.0.1"),
            port=self.environ.get("POSTGRES_PORT", "5432"),
            user=self.environ.get("POSTGRES_USER", "postgres"),
            dbname=self.environ.get("POSTGRES_DBNAME", "thirteen"),
        ) as conn:
            row = conn.execute(f'SELECT COUNT(*) FROM "{schema}".thirteen_events').fetchone()
            return int(row[0]) if row else 0

    def kill(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
