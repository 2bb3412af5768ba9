"""Attacks from outside on what landed for issues 22 and 23 (configuration, streams, heavy
reads): real ``thirteen serve`` processes, each finding one test that fails on the code as
found."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest

from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc
from service.rpc.runner import Runner
from tests.e2e.helpers import wait_until
from tests.support.cli import thirteen
from tests.support.serve_process import SCRIPT, ServeProcess


def test_an_abbreviated_config_flag_is_refused_not_silently_ignored(tmp_path: Path) -> None:
    """argparse took ``--conf FILE`` for ``--config FILE`` (abbreviations were allowed), but the
    settings are read by a pre-parser that allows none: the file was never read, its settings
    (and its unknown keys) silently ignored, while the command line looked right. The
    configured commands take their flags exactly: ``--conf`` is one line, exit status 2."""
    config = tmp_path / "thirteen.toml"
    config.write_text("[serve]\nmax-in-flight = 7\n")
    for command, *more in (("serve", "--address", "127.0.0.1:0"), ("worker",)):
        done = thirteen(command, "--conf", str(config), "--data", str(tmp_path / "data"), *more)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        [line] = done.stderr.splitlines()
        assert "unrecognized arguments: --conf" in line
    assert not (tmp_path / "data").exists()


def test_credentials_in_the_otlp_endpoint_are_not_logged(tmp_path: Path) -> None:
    """The logged configuration leaves out settings named like secrets, but ``--otlp-endpoint``
    (a URL, often a collector behind basic auth: https://user:password@host) is logged whole."""
    pytest.importorskip("opentelemetry.sdk")
    endpoint = "https://alice:s3cret-pw@127.0.0.1:9"
    server = ServeProcess(tmp_path / "data", "--otlp-endpoint", endpoint)
    try:
        wait_until(lambda: any('"configuration"' in line for line in server.lines), "config", 60)
    finally:
        server.stop()
    assert not any("s3cret-pw" in line for line in server.lines), [
        line[:200] for line in server.lines if "s3cret-pw" in line
    ]


def test_an_environment_setting_wins_over_the_files_setting_that_excludes_it(
    tmp_path: Path,
) -> None:
    """Precedence is flag > environment > file, and a flag replaces a setting of the flag it
    excludes; but ``THIRTEEN_SERVE_PEERS_FILE`` over a file's ``peers`` (an operator overriding
    the shared file for one replica) is refused as if both were given at one level."""
    (tmp_path / "c.toml").write_text('[serve]\npeers = "127.0.0.1:1"\n')
    (tmp_path / "peers").write_text("127.0.0.1:1\n")
    environ = {
        **os.environ,
        "THIRTEEN_STORE": "postgres",
        "POSTGRES_PORT": "1",  # no database: the start fails later, at the store
        "THIRTEEN_SERVE_PEERS_FILE": str(tmp_path / "peers"),
    }
    result = subprocess.run(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--config", str(tmp_path / "c.toml")],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "exclude each other" not in result.stderr, result.stderr


async def _watchers(address: str, streams: int) -> Counter[str]:
    """``streams`` WatchTable streams at once from one caller, each read to its first event."""
    channel = grpc.aio.insecure_channel(address)
    tables = table_pb2_grpc.TableServiceStub(channel)
    calls = [
        tables.WatchTable(table_pb2.WatchTableRequest(table_id="t", after=0))
        for _ in range(streams)
    ]
    codes: Counter[str] = Counter()

    async def first(call: Any) -> None:
        try:
            await call.read()
            codes["OK"] += 1
        except grpc.aio.AioRpcError as error:
            codes[error.code().name] += 1

    try:
        await asyncio.gather(*(first(call) for call in calls))
    finally:
        for call in calls:
            call.cancel()
        await channel.close()
    return codes


def test_streams_at_once_are_bounded_like_unary_calls(
    store: dict[str, str], tmp_path: Path
) -> None:
    """Admission counts unary calls only; WatchTable streams are not bounded in number. Measured
    on SQLite: 6,000 streams from one caller took the server from 162 to 295 MiB, and their
    catch-ups, queued as heavy reads one at a time, made another caller's ListRounds of 40
    rounds take 8.6 s instead of 0.05 s. Expected: past a bound (here --max-in-flight 10), a
    stream is refused RESOURCE_EXHAUSTED as a unary call is."""
    server = ServeProcess(tmp_path / "data", "--max-in-flight", "10", environ=store)
    try:
        server.tables.OpenTable(table_pb2.OpenTableRequest(table_id="t", request_id="o"))
        codes = asyncio.run(_watchers(server.address, 300))
    finally:
        server.stop()
    assert codes["RESOURCE_EXHAUSTED"] > 0, codes


def test_a_heavy_read_whose_caller_left_still_holds_the_one_heavy_slot() -> None:
    """``Runner.heavy`` runs one heavy read at a time, paced by its CPU time. A caller whose
    deadline passes while its read runs on the pool is cancelled: the semaphore is released
    and the rest computed from ``used = 0`` at once, while the read goes on in its thread. So
    callers with short deadlines run heavy reads side by side, unpaced (measured with the
    server's Runner: 7 at once from 6 cancelled callers and one honest; against a real server, 8
    callers of ListRounds(page_size=100) with 5-25 ms deadlines moved a game's p99 from 101 ms,
    with the same callers waiting, to 240 ms). Expected: the next heavy read starts only once
    the cancelled one has finished."""
    started = threading.Semaphore(0)
    release = threading.Event()
    running = [0, 0]  # now, most at once
    lock = threading.Lock()

    def read() -> None:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        started.release()
        release.wait(30)
        with lock:
            running[0] -= 1

    async def attack() -> None:
        runner = Runner(ThreadPoolExecutor(4))
        first = asyncio.create_task(runner.heavy(read))
        await asyncio.to_thread(started.acquire)  # the first read runs on the pool
        first.cancel()  # its caller's deadline passed
        second = asyncio.create_task(runner.heavy(read))
        second_started = await asyncio.to_thread(started.acquire, True, 5)
        release.set()
        await asyncio.gather(first, second, return_exceptions=True)
        runner.executor.shutdown(wait=True)
        assert not second_started, f"{running[1]} heavy reads ran at once"

    asyncio.run(attack())
