"""The work no caller waits for, in the serving process or in a worker (issue 21): the server's
CPU per command with ``thirteen serve --background here`` (the projector and the transparency
log in the serving process) against ``--background worker`` beside a ``thirteen worker``, whose
CPU is printed apart, on SQLite and on PostgreSQL (a fresh schema).

The client is ``tests.bench.load``'s (16 tables playing whole rounds, every RPC a command). The
worker's CPU is read from /proc over the measured window, then over the seconds it takes to
take in what the window stored (the views' and the tree's lag at its end)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import grpc

from domain.rules.cards import DECK
from tests.bench import database
from tests.bench.load import TABLES, Player, ServerProcess, Stubs, _pid_cpu, arrange, run_phase

ROUND_SECONDS = 15.0
DRAIN_SECONDS = 3.0  # after the window: the worker takes in what the window stored


class WorkerProcess:
    """``thirteen worker`` on the store; what ``run_phase`` reads of a server (its CPU)."""

    def __init__(self, data: Path, env: Mapping[str, str]) -> None:
        script = Path(sys.executable).with_name("thirteen")
        self.process = subprocess.Popen(
            [str(script), "worker", "--data", str(data), "--log-level", "warning"]  # noqa: RUF005
            + ["--log-key", str(data.parent / "log.key")],  # the servers' (tests/bench/load.py)
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "THIRTEEN_STORE": "sqlite", **env},
        )
        self.stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)

    def cpu_seconds(self) -> float:
        return _pid_cpu(self.process.pid) or 0.0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def _measure(
    background: str, data: Path, env: Mapping[str, str], helper: Executor
) -> Generator[str, None, tuple[float, float]]:
    """One configuration: (server µs per call, worker µs per call)."""
    server = ServerProcess(data, (), env, ("--background", background))
    worker = WorkerProcess(data, env) if background == "worker" else None
    channel = grpc.insecure_channel(server.address)
    try:
        players = [Player([Stubs.on(channel)], i, helper) for i in range(TABLES)]
        with ThreadPoolExecutor(TABLES) as pool:
            list(pool.map(Player.setup, players))
        measured: list[ServerProcess | WorkerProcess] = [server]
        if worker is not None:
            measured.append(worker)
        phase = run_phase(measured, players, Player.round, ROUND_SECONDS, helper)  # type: ignore[arg-type]
        drained = 0.0
        if worker is not None:
            before = worker.cpu_seconds()
            time.sleep(DRAIN_SECONDS)
            drained = worker.cpu_seconds() - before
        calls = phase.calls
        server_us = phase.cpu.servers[0] / calls * 1e6
        worker_us = (phase.cpu.servers[1] + drained) / calls * 1e6 if worker else 0.0
        rate = phase.rate(calls)
        line = (
            f"  --background {background:6}  {rate:7,.0f} commands/s   server "
            f"{server_us:5,.0f} us CPU per command ({phase.cpu.servers[0] / phase.seconds:4.0%} "
            "of a core)"
        )
        if worker is not None:
            line += (
                f"   worker {worker_us:5,.0f} us per command ("
                f"{phase.cpu.servers[1] / phase.seconds:4.0%} of a core; {drained:.2f} s CPU "
                f"after the window)   server + worker {server_us + worker_us:5,.0f} us"
            )
        yield line
        return server_us, worker_us
    finally:
        channel.close()
        server.stop()
        if worker is not None:
            worker.stop()


def _store(
    title: str, data: Path, envs: Iterator[Mapping[str, str]], helper: Executor
) -> Generator[str, None, None]:
    """Both arrangements, each on a store of its own (``envs``: one environment each)."""
    yield title
    here, _ = yield from _measure("here", data / "here", next(envs), helper)
    served, working = yield from _measure("worker", data / "worker", next(envs), helper)
    yield (
        f"  serving process's CPU per command, worker ÷ here: {served / here:4.2f}   "
        f"(server + worker) ÷ here: {(served + working) / here:4.2f}"
    )


def _schemas() -> Generator[Mapping[str, str], None, None]:
    """A fresh PostgreSQL schema for each configuration, dropped when the next is asked for."""
    while True:
        with database.fresh_schema() as env:
            yield env


def report() -> Iterator[str]:
    """The figures, line by line (about 2 minutes)."""
    data = Path(tempfile.mkdtemp(prefix="thirteen-bench-worker-"))
    yield (
        f"background work here or in a worker ({TABLES} tables playing rounds for "
        f"{ROUND_SECONDS:.0f} s per configuration; {os.cpu_count()} cores)"
    )
    helper = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    helper.submit(arrange, [str(c) for c in DECK[:13]]).result()  # before any channel exists
    try:
        sqlite = iter([{"THIRTEEN_STORE": "sqlite"}] * 2)
        yield from _store(" SQLite", data / "sqlite", sqlite, helper)
        reason = database.unreachable()
        if reason is not None:
            yield f" PostgreSQL figures skipped: {reason}"
            return
        schemas = _schemas()
        try:
            yield from _store(" PostgreSQL (a fresh schema each)", data / "pg", schemas, helper)
        finally:
            schemas.close()
    finally:
        helper.shutdown()
        shutil.rmtree(data, ignore_errors=True)
