"""What the heaviest reads do to everyone else (issue 22, finding 1): a normal game (16 tables
playing whole rounds) alone, then beside 4 callers asking ``ListRounds`` for the largest page
(100 rounds with their hands, the cap) of a table of 150 rounds, over and over. The normal
load's p99 beside them is printed against its p99 alone (target: at most 2x), with the heavy
callers' own rate. SQLite, one ``thirteen serve``."""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import grpc

from domain.rules.cards import DECK
from service._generated.thirteen.v1 import table_pb2
from tests.bench.load import (
    CALL_TIMEOUT,
    TABLES,
    Player,
    ServerProcess,
    Stubs,
    Tally,
    arrange,
    ms,
    run_phase,
)

ROUND_SECONDS = 15.0
HEAVY_CALLERS = 4
HEAVY_ROUNDS = 150  # on the heavy callers' table: more than a page holds
PAGE = 2**31 - 1  # served as the cap
TARGET = 2.0  # the normal load's p99 beside the heavy callers / alone


def _heavy(stubs: Stubs, table_id: str, stop: threading.Event, counted: list[int]) -> None:
    request = table_pb2.ListRoundsRequest(table_id=table_id, page_size=PAGE)
    while not stop.is_set():
        stubs.tables.ListRounds(request, timeout=CALL_TIMEOUT)
        counted.append(1)


def report() -> Iterator[str]:
    """The figures, line by line (about a minute)."""
    data = Path(tempfile.mkdtemp(prefix="thirteen-bench-heavy-"))
    helper = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    helper.submit(arrange, [str(c) for c in DECK[:13]]).result()  # before any channel exists
    server = ServerProcess(data / "s", (), {"THIRTEEN_STORE": "sqlite"})
    channel = grpc.insecure_channel(server.address)
    try:
        stubs = Stubs.on(channel)
        yield (
            f"heavy reads beside a game (SQLite, {TABLES} tables playing rounds for "
            f"{ROUND_SECONDS:.0f} s; {HEAVY_CALLERS} callers of ListRounds, page_size {PAGE}, on "
            f"a table of {HEAVY_ROUNDS} rounds)"
        )
        heavy = Player([stubs], TABLES, helper)
        heavy.setup()
        for _ in range(HEAVY_ROUNDS):
            heavy.round(Tally())
        players = [Player([stubs], i, helper) for i in range(TABLES)]
        with ThreadPoolExecutor(TABLES) as pool:
            list(pool.map(Player.setup, players))
        alone = run_phase([server], players, Player.round, ROUND_SECONDS, helper)
        stop, counted = threading.Event(), list[int]()
        callers = [
            threading.Thread(target=_heavy, args=(stubs, heavy.table_id, stop, counted))
            for _ in range(HEAVY_CALLERS)
        ]
        for caller in callers:
            caller.start()
        try:
            beside = run_phase([server], players, Player.round, ROUND_SECONDS, helper)
        finally:
            stop.set()
            for caller in callers:
                caller.join()
        p99_alone, p99_beside = ms(alone.every, 0.99), ms(beside.every, 0.99)
        ratio = p99_beside / p99_alone
        yield (
            f"  the game alone: {alone.rate(alone.calls):,.0f} commands/s, p50 "
            f"{ms(alone.every, 0.5):.1f} ms, p99 {p99_alone:.1f} ms"
        )
        yield (
            f"  beside the heavy callers: {beside.rate(beside.calls):,.0f} commands/s, p50 "
            f"{ms(beside.every, 0.5):.1f} ms, p99 {p99_beside:.1f} ms; the heavy callers read "
            f"{len(counted) / beside.seconds:,.1f} pages/s"
        )
        yield (
            f"  p99 beside / alone {ratio:.2f}x (target <= {TARGET:.0f}x: "
            f"{'met' if ratio <= TARGET else 'MISSED'})"
        )
    finally:
        channel.close()
        server.stop()
        helper.shutdown()
        shutil.rmtree(data, ignore_errors=True)
