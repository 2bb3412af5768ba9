"""Watch benchmark: GetBalance latency while a table plays rounds, with no WatchTable stream
and with 150 streams on that table whose clients never read, side by side; then while 150 more
streams catch up on the table's history.

The server is ``thirteen serve`` in a subprocess on a temporary SQLite store (as in
``tests.bench.service``). One client thread plays whole rounds at a table of four players
(suggestions in a helper process, so they do not hold the client's GIL); another calls
``WalletService.GetBalance`` at a steady 100 calls/s and times each call, so that the figure
is the latency a caller sees, not the throughput of a saturated server. Each phase plays its
own table: the idle streams are opened on a fresh table (so they are caught up at once), on
channels of their own, read up to their first event and then left alone. The catching-up
streams are opened from position 0 on that table once it has played its phase.
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from domain.rules.cards import DECK
from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc, wallet_pb2
from tests.bench.service import (
    CALL_TIMEOUT,
    CREDIT,
    PLAYERS,
    START_TIMEOUT,
    ServerProcess,
    Stubs,
    _ms,
    arrange,
)
from tests.support.health import health_stub

IDLE_STREAMS = 150
STREAM_CHANNELS = 3
PHASE_SECONDS = 15.0
WARMUP_ROUNDS = 5
PROBE_INTERVAL = 0.01  # GetBalance calls per second: 100


@dataclass
class Phase:
    latencies: list[float]
    failures: int
    rounds: int
    seconds: float
    server_cpu: float


class Table:
    """One table with four seated players, played round after round."""

    def __init__(self, stubs: Stubs, helper: Executor, name: str) -> None:
        self.stubs = stubs
        self.helper = helper
        self.name = name
        self.players = [f"{name}-{p}" for p in range(PLAYERS)]
        self.dealt = 0
        self.rounds = 0

    def setup(self) -> None:
        for p in self.players:
            self.stubs.wallets.Credit(
                wallet_pb2.CreditRequest(player_id=p, amount=CREDIT, transfer_id=f"credit-{p}"),
                timeout=CALL_TIMEOUT,
            )
        self.stubs.tables.OpenTable(
            table_pb2.OpenTableRequest(
                table_id=self.name,
                ruleset_parameters=table_pb2.RulesetParameters(stake_policy="fixed", base_stake=1),
            ),
            timeout=CALL_TIMEOUT,
        )
        for p in self.players:
            self.stubs.tables.SitDown(
                table_pb2.SitDownRequest(table_id=self.name, player_id=p), timeout=CALL_TIMEOUT
            )

    def round(self) -> None:
        tables = self.stubs.tables
        self.dealt += 1
        dealt = tables.Deal(
            table_pb2.DealRequest(table_id=self.name, request_id=f"d{self.dealt}"),
            timeout=CALL_TIMEOUT,
        )
        piles = self.helper.map(arrange, [list(hand.cards) for hand in dealt.hands])
        for hand, (front, middle, back) in zip(dealt.hands, piles, strict=True):
            tables.Arrange(
                table_pb2.ArrangeRequest(
                    round_id=dealt.round_id,
                    player_id=hand.player_id,
                    front=front,
                    middle=middle,
                    back=back,
                ),
                timeout=CALL_TIMEOUT,
            )
        tables.Reveal(table_pb2.RevealRequest(round_id=dealt.round_id), timeout=CALL_TIMEOUT)
        self.rounds += 1

    def events(self) -> int:
        """Events of the table and its rounds so far (Opened, the seats, and per round
        RoundStarted, RoundDealt, an arrangement each, RoundRevealed, RoundEnded)."""
        return 1 + PLAYERS + self.rounds * (PLAYERS + 4)


def _measure(server: ServerProcess, stubs: Stubs, table: Table) -> Phase:
    """Play rounds for ``PHASE_SECONDS`` while probing GetBalance at a steady rate."""
    stop = threading.Event()
    rounds = 0
    errors: list[BaseException] = []

    def play() -> None:
        nonlocal rounds
        try:
            while not stop.is_set():
                table.round()
                rounds += 1
        except BaseException as error:
            errors.append(error)

    player = threading.Thread(target=play, daemon=True)
    player.start()
    request = wallet_pb2.GetBalanceRequest(player_id=table.players[0])
    latencies: list[float] = []
    failures = 0
    cpu_before = server.cpu_seconds()
    started = time.perf_counter()
    next_call = started
    while time.perf_counter() - started < PHASE_SECONDS and not errors:
        call_started = time.perf_counter()
        try:
            stubs.wallets.GetBalance(request, timeout=CALL_TIMEOUT)
        except grpc.RpcError:
            failures += 1
        latencies.append(time.perf_counter() - call_started)
        next_call = max(next_call + PROBE_INTERVAL, time.perf_counter())
        time.sleep(max(0.0, next_call - time.perf_counter()))
    seconds = time.perf_counter() - started
    stop.set()
    player.join(timeout=CALL_TIMEOUT)
    if errors:
        raise RuntimeError(f"playing the table failed: {errors[0]!r}") from errors[0]
    return Phase(latencies, failures, rounds, seconds, server.cpu_seconds() - cpu_before)


class Streams:
    """``IDLE_STREAMS`` streams on a table from position 0, as its players and an observer,
    on channels of their own; each is read up to its first event, then never again."""

    def __init__(self, address: str, table: str) -> None:
        self.channels = [grpc.insecure_channel(address) for _ in range(STREAM_CHANNELS)]
        stubs = [table_pb2_grpc.TableServiceStub(c) for c in self.channels]
        self.streams: list[Any] = [
            stubs[n % STREAM_CHANNELS].WatchTable(
                table_pb2.WatchTableRequest(table_id=table, viewer=f"{table}-{n % (PLAYERS + 1)}")
            )
            for n in range(IDLE_STREAMS)
        ]

    def first_events(self) -> None:
        for stream in self.streams:
            next(stream)

    def close(self) -> None:
        for stream in self.streams:
            stream.cancel()
        for channel in self.channels:
            channel.close()


def _line(name: str, phase: Phase) -> str:
    return (
        f"  {name:<22} GetBalance p50 {_ms(phase.latencies, 0.5):8.2f} ms   "
        f"p99 {_ms(phase.latencies, 0.99):8.2f} ms   calls {len(phase.latencies):5,}   "
        f"failed {phase.failures}   rounds/s {phase.rounds / phase.seconds:5.1f}   "
        f"server CPU {phase.server_cpu / phase.seconds:4.0%} of a core"
    )


def report() -> Iterator[str]:
    """The figures, line by line as they are measured (about a minute)."""
    data = Path(tempfile.mkdtemp(prefix="thirteen-bench-watch-"))
    yield (
        f"watch streams (server: `thirteen serve` subprocess, SQLite; a table of {PLAYERS} "
        f"playing rounds; GetBalance probed at {1 / PROBE_INTERVAL:.0f}/s for "
        f"{PHASE_SECONDS:.0f} s per phase)"
    )
    helper = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    helper.submit(arrange, [str(c) for c in DECK[:13]]).result()  # before any channel exists
    server = ServerProcess(data)
    channel = grpc.insecure_channel(server.address)
    opened: list[Streams] = []
    try:
        health = health_stub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(), timeout=START_TIMEOUT)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        stubs = Stubs.on(channel)
        quiet, watched = Table(stubs, helper, "quiet"), Table(stubs, helper, "watched")
        for table in (quiet, watched):
            table.setup()
        for _ in range(WARMUP_ROUNDS):
            quiet.round()

        alone = _measure(server, stubs, quiet)
        yield _line("no stream", alone)
        opened.append(Streams(server.address, watched.name))
        opened[-1].first_events()
        idle = _measure(server, stubs, watched)
        yield _line(f"{IDLE_STREAMS} idle streams", idle)
        yield (
            f"  {'':<22} p50 x{_ms(idle.latencies, 0.5) / _ms(alone.latencies, 0.5):.1f}   "
            f"p99 x{_ms(idle.latencies, 0.99) / _ms(alone.latencies, 0.99):.1f}   "
            "with the idle streams open"
        )
        history = watched.events()
        opened.append(Streams(server.address, watched.name))  # they catch up as it plays on
        catching_up = _measure(server, stubs, watched)
        yield _line(f"+{IDLE_STREAMS} catching up", catching_up)
        yield f"  {'':<22} (from position 0 on a table of {history:,} events)"
    finally:
        for streams in opened:
            streams.close()
        channel.close()
        server.stop()
        helper.shutdown()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    for line in report():
        print(line, flush=True)
