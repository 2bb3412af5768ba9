"""Service benchmark: full rounds over gRPC against a trivial echo through the same server.

The server is ``thirteen serve`` in a subprocess on a temporary SQLite store, so the clients
and the server do not share a GIL. Sixteen client threads each own one table of four players
and play whole rounds (Deal, four Arrange from ``domain.suggest``, Reveal) for a fixed time;
the same threads first drive ``DiagnosticsService.Echo`` through the same server. Every RPC
counts as a command; latency is measured per call at the client (setup calls are not counted).
The suggestions (about 2 ms of CPU a hand) run in a helper process: computed in the client
threads they held the client's GIL and lowered the measured command rate by about 15%.

CPU time is sampled per phase for the server, the client (with its helper) and everything else
on the machine: a server near 100% of one core is saturated; CPU per call compares the cost of
a command with that of an echo; other processes above a quarter of a core are flagged, since
the figures then drop (the machine has two cores).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from domain.cards import DECK, format_cards, parse_cards
from domain.ruleset import STANDARD
from domain.suggest import suggest
from service._generated.thirteen.v1 import (
    diagnostics_pb2,
    diagnostics_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)

TABLES = 16
PLAYERS = 4
WARMUP_SECONDS = 2.0
ECHO_SECONDS = 10.0
ROUND_SECONDS = 20.0
START_TIMEOUT = 30.0
CALL_TIMEOUT = 30.0
CREDIT = 10_000_000  # a fixed base stake of 1 never runs a wallet below the seat minimum
TARGET_RATIO = 0.5
BUSY = 0.25  # other processes above this share of a core make the figures unreliable

_SERVING = re.compile(r"serving gRPC on \S+:(\d+)")
_TICK = os.sysconf("SC_CLK_TCK")


class ServerProcess:
    """``thirteen serve`` on a free port; stderr is drained so the pipe never fills. ``program``
    replaces the command before ``serve`` (e.g. a profiling wrapper)."""

    def __init__(self, data: Path, program: Sequence[str] = ()) -> None:
        script = Path(sys.executable).with_name("thirteen")
        command = list(program) or (
            [str(script)] if script.exists() else [sys.executable, "-m", "service.tools.cli"]
        )
        command += ["serve", "--address", "127.0.0.1:0", "--data", str(data)]
        command += ["--log-level", "warning"]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        self.stderr: list[str] = []
        self._port: int | None = None
        self._seen = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()
        if not self._seen.wait(START_TIMEOUT) or self._port is None:
            self.stop()
            raise RuntimeError("thirteen serve did not start:\n" + "".join(self.stderr[-20:]))
        self.address = f"127.0.0.1:{self._port}"

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr.append(line)
            found = _SERVING.search(line)
            if found and self._port is None:
                self._port = int(found.group(1))
                self._seen.set()
        self._seen.set()  # exited before serving

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server process so far."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # SIGTERM: the graceful shutdown
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / _TICK


@dataclass
class Stubs:
    wallets: wallet_pb2_grpc.WalletServiceStub
    tables: table_pb2_grpc.TableServiceStub
    diagnostics: diagnostics_pb2_grpc.DiagnosticsServiceStub

    @classmethod
    def on(cls, channel: grpc.Channel) -> Stubs:
        return cls(
            wallet_pb2_grpc.WalletServiceStub(channel),
            table_pb2_grpc.TableServiceStub(channel),
            diagnostics_pb2_grpc.DiagnosticsServiceStub(channel),
        )


@dataclass
class Tally:
    """What one client thread did in the measured window."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    rounds: int = 0
    fouls: int = 0
    started: float = 0.0
    ended: float = 0.0

    def timed(self, kind: str, call: Callable[..., object], request: object) -> object:
        start = time.perf_counter()
        response = call(request, timeout=CALL_TIMEOUT)
        self.latencies[kind].append(time.perf_counter() - start)
        return response


def arrange(cards: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """``domain.suggest``'s arrangement of a hand (never a foul), as card strings."""
    arrangement = suggest(parse_cards(cards), STANDARD).arrangement
    return (
        format_cards(arrangement.front),
        format_cards(arrangement.middle),
        format_cards(arrangement.back),
    )


def _process_cpu() -> float:
    return time.process_time()


class Player:
    """One table with four seated players, played round after round. The suggestions run in
    ``helper`` (a process of their own) so that they do not hold the client's GIL."""

    def __init__(self, stubs: Stubs, index: int, helper: Executor) -> None:
        self.stubs = stubs
        self.helper = helper
        self.table_id = f"bench-{index}"
        self.players = [f"bench-{index}-{p}" for p in range(PLAYERS)]
        self.dealt = 0

    def setup(self) -> None:
        for p in self.players:
            self.stubs.wallets.Credit(
                wallet_pb2.CreditRequest(player_id=p, amount=CREDIT, transfer_id=f"credit-{p}"),
                timeout=CALL_TIMEOUT,
            )
        self.stubs.tables.OpenTable(
            table_pb2.OpenTableRequest(
                table_id=self.table_id,
                request_id=f"open-{self.table_id}",
                ruleset_parameters=table_pb2.RulesetParameters(stake_policy="fixed", base_stake=1),
            ),
            timeout=CALL_TIMEOUT,
        )
        for p in self.players:
            self.stubs.tables.SitDown(
                table_pb2.SitDownRequest(table_id=self.table_id, player_id=p),
                timeout=CALL_TIMEOUT,
            )

    def round(self, tally: Tally) -> None:
        tables = self.stubs.tables
        self.dealt += 1
        request = table_pb2.DealRequest(
            table_id=self.table_id, client_seed=f"seed-{self.dealt}", request_id=f"d{self.dealt}"
        )
        dealt = tally.timed("Deal", tables.Deal, request)
        assert isinstance(dealt, table_pb2.DealResponse)
        piles = self.helper.map(arrange, [list(hand.cards) for hand in dealt.hands])
        for hand, (front, middle, back) in zip(dealt.hands, piles, strict=True):
            submit = table_pb2.ArrangeRequest(
                round_id=dealt.round_id,
                player_id=hand.player_id,
                front=front,
                middle=middle,
                back=back,
            )
            answer = tally.timed("Arrange", tables.Arrange, submit)
            assert isinstance(answer, table_pb2.ArrangeResponse)
            tally.fouls += answer.foul
        tally.timed("Reveal", tables.Reveal, table_pb2.RevealRequest(round_id=dealt.round_id))
        tally.rounds += 1

    def echo(self, tally: Tally) -> None:
        request = diagnostics_pb2.EchoRequest(message=self.table_id)
        tally.timed("Echo", self.stubs.diagnostics.Echo, request)


@dataclass
class Phase:
    calls: int
    rounds: int
    fouls: int
    seconds: float
    latencies: dict[str, list[float]]
    server_cpu: float  # CPU seconds used by the server process in the window
    client_cpu: float  # the client process and its suggestion helper
    other_cpu: float  # CPU seconds used by everything else on the machine meanwhile

    @property
    def every(self) -> list[float]:
        return [x for samples in self.latencies.values() for x in samples]

    def rate(self, count: int) -> float:
        return count / self.seconds


def _run_phase(
    server: ServerProcess,
    players: list[Player],
    step: Callable[[Player, Tally], None],
    duration: float,
    helper: Executor,
) -> Phase:
    """Warm up, then run ``step`` on every player's thread for ``duration`` seconds."""
    barrier = threading.Barrier(len(players) + 1)
    tallies = [Tally() for _ in players]
    errors: list[BaseException] = []

    def work(player: Player, tally: Tally) -> None:
        try:
            warm_until = time.perf_counter() + WARMUP_SECONDS
            while time.perf_counter() < warm_until:
                step(player, Tally())
        except BaseException as error:
            errors.append(error)
        barrier.wait()
        if errors:
            return
        try:
            tally.started = time.perf_counter()
            stop = tally.started + duration
            while time.perf_counter() < stop:
                step(player, tally)
            tally.ended = time.perf_counter()
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=work, args=(p, t), daemon=True)
        for p, t in zip(players, tallies, strict=True)
    ]
    for thread in threads:
        thread.start()
    barrier.wait()
    server_before, machine_before = server.cpu_seconds(), _machine_busy_seconds()
    client_before = time.process_time() + helper.submit(_process_cpu).result()
    for thread in threads:
        thread.join()
    server_cpu = server.cpu_seconds() - server_before
    client_cpu = time.process_time() + helper.submit(_process_cpu).result() - client_before
    other_cpu = _machine_busy_seconds() - machine_before - server_cpu - client_cpu
    if errors:
        raise RuntimeError(f"a client call failed: {errors[0]!r}") from errors[0]
    latencies: dict[str, list[float]] = defaultdict(list)
    for tally in tallies:
        for kind, samples in tally.latencies.items():
            latencies[kind] += samples
    return Phase(
        calls=sum(len(s) for s in latencies.values()),
        rounds=sum(t.rounds for t in tallies),
        fouls=sum(t.fouls for t in tallies),
        seconds=max(t.ended for t in tallies) - min(t.started for t in tallies),
        latencies=latencies,
        server_cpu=server_cpu,
        client_cpu=client_cpu,
        other_cpu=max(0.0, other_cpu),
    )


def _ms(samples: list[float], q: float) -> float:
    if q == 0.5:
        return statistics.median(samples) * 1e3
    return sorted(samples)[int(q * (len(samples) - 1))] * 1e3


def _cpu(phase: Phase) -> str:
    busy = phase.other_cpu / phase.seconds
    return (
        f"    CPU  server {phase.server_cpu / phase.seconds:4.0%} of a core "
        f"({phase.server_cpu / phase.calls * 1e6:,.0f} us per call)   "
        f"client {phase.client_cpu / phase.seconds:4.0%}   other processes {busy:4.0%}"
        + ("   (the machine was busy: figures are low)" if busy > BUSY else "")
    )


def report() -> Iterator[str]:
    """The figures, line by line as they are measured (about 40 s)."""
    data = Path(tempfile.mkdtemp(prefix="thirteen-bench-"))
    yield (
        f"service over gRPC (server: `thirteen serve` subprocess, SQLite file in a temp dir; "
        f"clients: {TABLES} threads, sync grpc, one channel, suggestions in a helper process; "
        f"{os.cpu_count()} cores)"
    )
    helper = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    helper.submit(arrange, [str(c) for c in DECK[:13]]).result()  # before any channel exists
    server = ServerProcess(data)
    channel = grpc.insecure_channel(server.address)
    try:
        health = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(), timeout=START_TIMEOUT)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        stubs = Stubs.on(channel)
        players = [Player(stubs, i, helper) for i in range(TABLES)]
        with ThreadPoolExecutor(TABLES) as pool:
            list(pool.map(Player.setup, players))

        echo = _run_phase(server, players, Player.echo, ECHO_SECONDS, helper)
        samples = echo.every
        yield (
            f"  echo (DiagnosticsService.Echo)        calls/s {echo.rate(echo.calls):>7,.0f}   "
            f"p50 {_ms(samples, 0.5):6.2f} ms   p99 {_ms(samples, 0.99):6.2f} ms   "
            f"over {echo.seconds:.0f} s"
        )
        yield _cpu(echo)

        rounds = _run_phase(server, players, Player.round, ROUND_SECONDS, helper)
        samples = rounds.every
        yield (
            f"  full rounds ({TABLES} tables x {PLAYERS} players)  commands/s "
            f"{rounds.rate(rounds.calls):>7,.0f}   "
            f"p50 {_ms(samples, 0.5):6.2f} ms   p99 {_ms(samples, 0.99):6.2f} ms   "
            f"over {rounds.seconds:.0f} s   rounds/s {rounds.rate(rounds.rounds):5.1f}"
        )
        yield (
            "    "
            + "   ".join(
                f"{kind} p50 {_ms(rounds.latencies[kind], 0.5):6.2f} ms "
                f"p99 {_ms(rounds.latencies[kind], 0.99):6.2f} ms"
                for kind in ("Deal", "Arrange", "Reveal")
            )
            + f"   fouls {rounds.fouls}"
        )
        yield _cpu(rounds)
        ratio = rounds.rate(rounds.calls) / echo.rate(echo.calls)
        yield (f"  commands/s / echo calls/s  {ratio:5.1%}   (target >= {TARGET_RATIO:.0%})")
    finally:
        channel.close()
        server.stop()
        helper.shutdown()
        shutil.rmtree(data, ignore_errors=True)
