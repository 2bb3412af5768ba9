"""The machinery of the service benchmark: ``thirteen serve`` subprocesses, the client threads
that play whole rounds (or call ``grpc.health.v1.Health/Check``) against them, and CPU
accounting per process from /proc.

A client thread owns one table of four players. With several servers (replicas on one
PostgreSQL schema) it sends its calls to them in turn, call by call, so that every table gets
commands through every replica. The arrangements are computed in a helper process: in the
client threads they held the client's GIL and lowered the measured command rate by about 15%
(with ``domain.rules.suggest``, 1.6 ms of CPU a hand). They are now a plain greedy split (0.3 ms a
hand): on two cores, suggestions for 2,000 commands/s would have taken a core and a half from
the server under test.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Protocol

import grpc
from grpc_health.v1 import health_pb2

from domain.rules.cards import Card, format_cards, parse_cards
from domain.rules.hands import evaluator5
from domain.rules.ruleset import STANDARD
from service._generated.thirteen.v1 import (
    diagnostics_pb2,
    diagnostics_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from tests.support.health import HealthStub, health_stub
from tests.support.seed_key import ensure_log_key, ensure_seed_key

TABLES = 16
PLAYERS = 4
WARMUP_SECONDS = 2.0
START_TIMEOUT = 30.0
CALL_TIMEOUT = 30.0
CREDIT = 10_000_000  # a fixed base stake of 1 never runs a wallet below the seat minimum
ECHO_MESSAGE = "x" * 200  # a typical command's request is 100-400 bytes on the wire
BUSY = 0.25  # other processes above this share of a core make the figures unreliable

_SERVING = re.compile(r"serving gRPC on \S+:(\d+)")
_TICK = os.sysconf("SC_CLK_TCK")


class ServerProcess:
    """``thirteen serve`` on a free port; stderr is drained so the pipe never fills. ``program``
    replaces the command before ``serve`` (e.g. a profiling wrapper); ``env`` is laid over the
    environment (the store: SQLite unless it says ``THIRTEEN_STORE=postgres``); ``extra`` flags
    go after the others (``--peers-file``, ``--background worker``)."""

    address: str

    def __init__(
        self,
        data: Path,
        program: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        extra: Sequence[str] = (),
    ) -> None:
        script = Path(sys.executable).with_name("thirteen")
        command = list(program) or (
            [str(script)] if script.exists() else [sys.executable, "-m", "service.entrypoints.cli"]
        )
        command += ["serve", "--address", "127.0.0.1:0", "--data", str(data)]
        seed_key = ensure_seed_key(data.parent / "seed.key")  # shared by the replicas
        command += ["--seed-key", str(seed_key)]
        if "--log-key" not in extra:  # shared too, as every replica's must be
            command += ["--log-key", str(data.parent / "log.key")]
        ensure_log_key(data, command, {"THIRTEEN_STORE": "sqlite", **(env or {})})
        command += ["--log-level", "warning", *extra]
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "THIRTEEN_STORE": "sqlite", **(env or {})},
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
        return _pid_cpu(self.process.pid) or 0.0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # SIGTERM: the graceful shutdown
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _pid_cpu(pid: int | str) -> float | None:
    """User + system CPU seconds of a process, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK


def _machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores), from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / _TICK


_CLIENT_BACKEND = re.compile(r"\(\d+\)|\[local\]")  # "postgres: … user db host(port) …"


@dataclass(frozen=True)
class Process:
    name: str  # what it runs, in a few words
    cpu: float  # CPU seconds so far
    postgres: bool
    session: bool  # a PostgreSQL client's session (not the server's own processes)


def _processes() -> dict[int, Process]:
    """Every process on the machine with its CPU time so far, from /proc."""
    found: dict[int, Process] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().decode(errors="replace").split("\0")
            comm = Path(entry.path, "comm").read_text().strip()
        except OSError:
            continue
        cpu = _pid_cpu(entry.name)
        if cpu is None:
            continue
        words = [w for w in argv if w]
        if comm == "postgres":
            session = _CLIENT_BACKEND.search(" ".join(words)) is not None
            name = "PostgreSQL sessions of others" if session else "PostgreSQL"
            found[int(entry.name)] = Process(name, cpu, True, session)
        else:
            name = " ".join([Path(words[0]).name, *words[1:3]]) if words else comm
            found[int(entry.name)] = Process(" ".join(name.split())[:40], cpu, False, False)
    return found


@dataclass
class Stubs:
    wallets: wallet_pb2_grpc.WalletServiceStub
    tables: table_pb2_grpc.TableServiceStub
    health: HealthStub
    diagnostics: diagnostics_pb2_grpc.DiagnosticsServiceStub

    @classmethod
    def on(cls, channel: grpc.Channel) -> Stubs:
        return cls(
            wallet_pb2_grpc.WalletServiceStub(channel),
            table_pb2_grpc.TableServiceStub(channel),
            health_stub(channel),
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


def _strongest(pool: Sequence[Card]) -> tuple[Card, ...]:
    """The strongest five cards of ``pool`` (``value5`` inlined over every five of them)."""
    kev, flushes, others = evaluator5(STANDARD.wheel)
    best: tuple[Card, ...] = ()
    top = -1
    for five in combinations(pool, 5):
        a, b, c, d, e = kev[five[0]], kev[five[1]], kev[five[2]], kev[five[3]], kev[five[4]]
        if a & b & c & d & e & 0xF000:
            value = flushes[(a | b | c | d | e) >> 16]
        else:
            value = others[(a & 0xFF) * (b & 0xFF) * (c & 0xFF) * (d & 0xFF) * (e & 0xFF)]
        if value > top:
            best, top = five, value
    return best


def arrange(cards: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """A non-foul arrangement of a hand, as card strings: the strongest back of the thirteen
    cards, the strongest middle of the eight left, the rest in front (each pile is the best of
    a set holding the next one's cards, as in ``domain.rules.suggest``, without its specials and
    tie-breaks: about 0.3 ms of CPU a hand instead of 1.6 ms)."""
    hand = parse_cards(cards)
    back = _strongest(hand)
    rest = [c for c in hand if c not in back]
    middle = _strongest(rest)
    front = [c for c in rest if c not in middle]
    return format_cards(front), format_cards(middle), format_cards(back)


def _process_cpu() -> float:
    return time.process_time()


class Player:
    """One table with four seated players, played round after round. The suggestions run in
    ``helper`` (a process of their own) so that they do not hold the client's GIL. With several
    servers, each call goes to the next one in turn (tables start on different ones), as a
    round-robin balancer sends them, or to the table's owner."""

    def __init__(
        self,
        stubs: Sequence[Stubs],
        index: int,
        helper: Executor,
        owner: Callable[[str], int] | None = None,
    ) -> None:
        self.stubs = list(stubs)
        self.helper = helper
        self.table_id = f"bench-{index}"
        # With ``owner`` (table id → the index of its owner's stubs), every call of the table
        # goes to its owner, as a client that knows the owners would send it.
        self.owner = None if owner is None else self.stubs[owner(self.table_id)]
        self.players = [f"bench-{index}-{p}" for p in range(PLAYERS)]
        self.dealt = 0
        self.turn = index

    def next(self) -> Stubs:
        if self.owner is not None:
            return self.owner
        self.turn += 1
        return self.stubs[self.turn % len(self.stubs)]

    def setup(self) -> None:
        stubs = self.stubs[0]
        for p in self.players:
            stubs.wallets.Credit(
                wallet_pb2.CreditRequest(player_id=p, amount=CREDIT, transfer_id=f"credit-{p}"),
                timeout=CALL_TIMEOUT,
            )
        stubs.tables.OpenTable(
            table_pb2.OpenTableRequest(
                table_id=self.table_id,
                request_id=f"open-{self.table_id}",
                ruleset_parameters=table_pb2.RulesetParameters(stake_policy="fixed", base_stake=1),
            ),
            timeout=CALL_TIMEOUT,
        )
        for p in self.players:
            stubs.tables.SitDown(
                table_pb2.SitDownRequest(table_id=self.table_id, player_id=p),
                timeout=CALL_TIMEOUT,
            )

    def round(self, tally: Tally) -> None:
        self.dealt += 1
        request = table_pb2.DealRequest(
            table_id=self.table_id, client_seed=f"seed-{self.dealt}", request_id=f"d{self.dealt}"
        )
        dealt = tally.timed("Deal", self.next().tables.Deal, request)
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
            answer = tally.timed("Arrange", self.next().tables.Arrange, submit)
            assert isinstance(answer, table_pb2.ArrangeResponse)
            tally.fouls += answer.foul
        reveal = table_pb2.RevealRequest(round_id=dealt.round_id)
        tally.timed("Reveal", self.next().tables.Reveal, reveal)
        tally.rounds += 1

    def echo(self, tally: Tally) -> None:
        """``DiagnosticsService/Echo`` with a message about the size of a command's request and
        response: the server's whole stack (interceptors, thread pool, logging) and the client's
        own cost per call, with no command behind it."""
        request = diagnostics_pb2.EchoRequest(message=ECHO_MESSAGE)
        answer = tally.timed("Echo", self.next().diagnostics.Echo, request)
        assert isinstance(answer, diagnostics_pb2.EchoResponse)

    def health(self, tally: Tally) -> None:
        answer = tally.timed("Check", self.next().health.Check, health_pb2.HealthCheckRequest())
        assert isinstance(answer, health_pb2.HealthCheckResponse)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


@dataclass
class Cpu:
    """CPU seconds used in a measured window, per process or group of processes."""

    servers: list[float]  # each ``thirteen serve``
    client: float  # the client process (its gRPC calls, and the wait sampler if any)
    helper: float  # the client's suggestion helper
    postgres: float  # PostgreSQL's own processes and the sampled sessions (none without one)
    other: float  # everything else on the machine meanwhile
    busiest: tuple[str, float]  # the process (by what it runs) that used most of ``other``
    machine: float  # all of it (busy time of every core, from /proc/stat)


class Sampler(Protocol):
    """Something watched during a measured window (the database's waits)."""

    def start(self) -> None: ...

    def stop(self) -> object: ...

    def backends(self) -> set[int]:
        """The PostgreSQL sessions (pids) of the servers under test, seen while sampling."""
        ...


@dataclass
class Phase:
    calls: int
    rounds: int
    fouls: int
    seconds: float
    latencies: dict[str, list[float]]
    cpu: Cpu
    sampled: object = None  # what the sampler saw, if there was one

    @property
    def every(self) -> list[float]:
        return [x for samples in self.latencies.values() for x in samples]

    def rate(self, count: int) -> float:
        return count / self.seconds

    @property
    def server_cpu(self) -> float:
        return sum(self.cpu.servers)


def run_phase(
    servers: Sequence[ServerProcess],
    players: list[Player],
    step: Callable[[Player, Tally], None],
    duration: float,
    helper: Executor,
    sampler: Sampler | None = None,
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
            while time.perf_counter() < stop and not errors:
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
    if sampler is not None:
        sampler.start()
    servers_before = [s.cpu_seconds() for s in servers]
    processes_before, machine_before = _processes(), _machine_busy_seconds()
    client_before, helper_before = time.process_time(), helper.submit(_process_cpu).result()
    for thread in threads:
        thread.join()
    client_cpu = time.process_time() - client_before
    helper_cpu = helper.submit(_process_cpu).result() - helper_before
    servers_cpu = [s.cpu_seconds() - b for s, b in zip(servers, servers_before, strict=True)]
    processes_after, machine = _processes(), _machine_busy_seconds() - machine_before
    sampled = sampler.stop() if sampler is not None else None
    if errors:
        tails = "".join(
            f"\n--- stderr of server {i + 1} (exit code {s.process.poll()}):\n"
            + "".join(s.stderr[-15:])
            for i, s in enumerate(servers)
        )
        raise RuntimeError(f"a client call failed: {errors[0]!r}{tails}") from errors[0]
    ours = sampler.backends() if sampler is not None else set()
    known = {s.process.pid for s in servers} | {os.getpid(), helper.submit(os.getpid).result()}
    postgres = 0.0
    others: dict[str, float] = defaultdict(float)
    for pid, process in processes_after.items():
        before = processes_before.get(pid)
        used = process.cpu - (before.cpu if before and before.name == process.name else 0.0)
        if pid in known:
            continue
        if process.postgres and sampler is not None and (pid in ours or not process.session):
            postgres += used
        else:
            others[process.name] += used
    busiest = max(others.items(), key=lambda item: item[1], default=("-", 0.0))
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
        cpu=Cpu(
            servers=servers_cpu,
            client=client_cpu,
            helper=helper_cpu,
            postgres=postgres,
            other=max(0.0, machine - sum(servers_cpu) - client_cpu - helper_cpu - postgres),
            busiest=busiest,
            machine=machine,
        ),
        sampled=sampled,
    )


def ms(samples: list[float], q: float) -> float:
    if q == 0.5:
        return statistics.median(samples) * 1e3
    return sorted(samples)[int(q * (len(samples) - 1))] * 1e3
