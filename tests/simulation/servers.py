"""The servers a simulation talks to, restartable on the same store.

- ``ServeProcess``: the real ``thirteen serve`` in a subprocess on ``127.0.0.1:0`` (the port is
  read from its ``serving gRPC on`` line), stopped with SIGTERM or ``kill -9``. ``thirteen
  serve`` has no way to fake time, so clock jumps need the in-process server.
- ``InProcessServer``: ``service.rpc.server.start`` on an event-loop thread with a ``ManualClock``
  and seeded deal seeds; a crash stops the gRPC server without grace and drops the application,
  projector, follower and sweeper, whose in-memory state is lost as a dead process's would be.

Both hand out the current stubs (``stubs()``); a restart makes new ones on the new port, so a
client that gets UNAVAILABLE simply asks again.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from domain.fairness.seeds import KeyRing
from service._generated.thirteen.v1 import (
    audit_pb2_grpc,
    results_pb2_grpc,
    table_pb2_grpc,
    wallet_pb2_grpc,
)
from tests.support.seed_key import ensure_log_key, ensure_seed_key

SCRIPT = Path(sys.executable).parent / "thirteen"
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Stubs:
    generation: int
    wallets: Any
    tables: Any
    results: Any
    audit: Any

    @classmethod
    def of(cls, channel: grpc.Channel, generation: int) -> Stubs:
        return cls(
            generation,
            wallet_pb2_grpc.WalletServiceStub(channel),
            table_pb2_grpc.TableServiceStub(channel),
            results_pb2_grpc.ResultsServiceStub(channel),
            audit_pb2_grpc.AuditServiceStub(channel),
        )


def log_record(line: str) -> dict[str, Any]:
    """A server log line as a record; a line that is not a JSON object is kept as ``raw``."""
    text = line.rstrip("\n")
    if text.startswith("{"):
        try:
            record = json.loads(text)
        except ValueError:
            pass
        else:
            if isinstance(record, dict):
                return record
    return {"raw": text}


class ServeProcess:
    """``thirteen serve --address 127.0.0.1:0`` on one store, across restarts."""

    kinds = ("graceful", "kill9")
    clock = None
    broken: str | None = None  # why the server could not be started again

    def __init__(
        self,
        data: Path,
        environ: dict[str, str],
        *,
        app_name: str = "",
        extra: tuple[str, ...] = (),
    ) -> None:
        self.data = data
        self.environ = dict(environ)
        self.app_name = app_name  # libpq's application_name for every session (PGAPPNAME)
        self.extra = extra  # more flags for ``serve`` (a replica's ``--peers-file``)
        self.address = ""
        self.generation = 0
        self.exit_codes: list[tuple[str, int]] = []  # (how it was stopped, status)
        self._records: list[dict[str, Any]] = []
        self._channels: list[grpc.Channel] = []
        self._stubs: Stubs | None = None
        self._lock = threading.Lock()  # one restart at a time
        self.process: subprocess.Popen[str] | None = None
        self._start()

    # Lifecycle --------------------------------------------------------------------------

    def _start(self) -> None:
        self.generation += 1
        generation = self.generation
        env = {**os.environ, **self.environ}
        if self.app_name:
            env["PGAPPNAME"] = self.app_name
        ensure_seed_key(self.data / "seed.key")  # serve makes one only for SQLite
        ensure_log_key(self.data, self.extra, self.environ)  # and a log key for a new one
        process = subprocess.Popen(
            [
                *(str(SCRIPT), "serve", "--address", f"{LOOPBACK}:0", "--data", str(self.data)),
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        port: list[int] = []

        def read() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                record = log_record(line)
                record["generation"] = generation
                self._records.append(record)
                if "serving gRPC on" in line and not port:
                    address = line.split("serving gRPC on ")[1].split()[0]
                    port.append(int(address.rsplit(":", 1)[1]))

        threading.Thread(target=read, daemon=True, name=f"serve-log-{generation}").start()
        deadline = time.monotonic() + 60
        while not port:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                lines = [r.get("raw") or json.dumps(r) for r in self._records[-20:]]
                raise RuntimeError("thirteen serve did not start:\n" + "\n".join(lines))
            time.sleep(0.02)
        self.process = process
        self.address = f"{LOOPBACK}:{port[0]}"
        channel = grpc.insecure_channel(self.address)
        self._channels.append(channel)
        self._stubs = Stubs.of(channel, generation)

    def _end(self, how: str) -> None:
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM if how == "graceful" else signal.SIGKILL)
        try:
            status = process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            status = process.wait(timeout=10)
            how = f"{how} (hung: killed)"
        self.exit_codes.append((how, status))
        self.process = None

    def restart(self, kind: str) -> float:
        """Stop the server (SIGTERM or SIGKILL) and start another on the same store; returns
        the seconds it took."""
        started = time.monotonic()
        with self._lock:
            self._end("graceful" if kind == "graceful" else "kill9")
            try:
                self._start()
            except RuntimeError as error:
                self.broken = str(error)
                raise
        return time.monotonic() - started

    def stop(self) -> None:
        with self._lock:
            self._end("graceful")
        for channel in self._channels:
            channel.close()
        self._channels.clear()

    def abort(self) -> None:
        """Kill whatever runs, for cleanup after a failure."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.process = None
        for channel in self._channels:
            channel.close()
        self._channels.clear()

    # For clients and checks -------------------------------------------------------------

    def stubs(self) -> Stubs:
        stubs = self._stubs
        assert stubs is not None
        return stubs

    def records(self) -> list[dict[str, Any]]:
        return list(self._records)


class InProcessServer:
    """The server in this process on a ``ManualClock``; deal seeds come from ``seed``."""

    kinds = ("graceful", "crash")
    broken: str | None = None

    def __init__(self, data: Path, environ: dict[str, str], clock: Any, seed: int) -> None:
        import structlog
        from structlog.testing import capture_logs

        self.data = data
        self.environ = dict(environ)
        self.clock = clock
        self.generation = 0
        self.exit_codes: list[tuple[str, int]] = []
        counter = itertools.count()
        # R12.1 wants unpredictable seeds; a replayable simulation wants the same deals again:
        # a key and commitment nonces drawn from the run's seed (the key outlives restarts).
        self.seed_keys = KeyRing.of([hashlib.sha256(f"thirteen-sim-key:{seed}".encode()).digest()])
        self.nonces: Callable[[], bytes] = lambda: hashlib.sha256(
            f"thirteen-sim:{seed}:{next(counter)}".encode()
        ).digest()[:16]
        self._capture = capture_logs(processors=[structlog.processors.format_exc_info])
        self._records: list[MutableMapping[str, Any]] = self._capture.__enter__()
        self._lock = threading.Lock()
        self._channels: list[grpc.Channel] = []
        self.running: Any = None
        self._start()

    def _start(self) -> None:
        from service.application import Thirteen
        from service.bootstrap import ServerOnThread
        from service.eventstore.storage import store_env

        self.generation += 1
        app = Thirteen(
            store_env(self.data, self.environ),
            clock=self.clock,
            seed_keys=self.seed_keys,
            nonces=self.nonces,
        )
        app.database.protect()
        self.app = app
        self.served = ServerOnThread(app, f"{LOOPBACK}:0", sweep_interval=0.02)
        self.running = self.served.running
        channel = grpc.insecure_channel(f"{LOOPBACK}:{self.running.port}")
        self._channels.append(channel)
        self._stubs = Stubs.of(channel, self.generation)

    def _call(self, coroutine: Any) -> Any:
        return self.served.call(coroutine)

    def _end(self, how: str) -> None:
        running = self.running
        if running is None:
            return
        if how == "graceful":
            self._call(running.stop(grace=1))
        else:
            # What a dead process leaves behind: no grace for calls in flight, nothing more
            # written by its background threads, every lock and connection let go. Nothing
            # in memory survives: the next start reads the store only.
            # A command already running on a worker thread finishes (as if the crash came
            # right after it); its caller got CANCELLED and must find out by retrying.
            self._call(running.server.stop(None))
            running.sweeper.stop()
            running.follower.stop()
            running.projector.stop()  # joins its thread and releases the views' lock
            if running.transparency is not None:  # its thread, and its advisory lock
                running.transparency.stop(drain=False)
            running.executor.shutdown(wait=True, cancel_futures=True)
            running.views.close()
            running.app.close()
            if running.serving_lock is not None:  # the operating system lets a dead one go
                running.serving_lock.release()
        self.served.end_loop()
        self.exit_codes.append((how, 0))
        self.running = None

    def restart(self, kind: str) -> float:
        started = time.monotonic()
        with self._lock:
            self._end(kind)
            self._start()
        return time.monotonic() - started

    def stop(self) -> None:
        with self._lock:
            self._end("graceful")
        for channel in self._channels:
            channel.close()
        self._channels.clear()
        self._capture.__exit__(None, None, None)

    def abort(self) -> None:
        with contextlib.suppress(Exception):  # cleanup after a failure must not hide it
            self.stop()

    def stubs(self) -> Stubs:
        return self._stubs

    def records(self) -> list[dict[str, Any]]:
        return [dict(record) for record in self._records]

    def caught_up(self, timeout: float = 10.0) -> bool:
        """Whether the views reach the newest event within ``timeout`` seconds."""
        return bool(self.running.projector.wait(self.app.max_position(), timeout))
