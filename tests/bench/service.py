"""Service benchmark: full rounds over gRPC against ``grpc.health.v1.Health/Check`` and an echo
through the same server, on SQLite, on PostgreSQL, and on PostgreSQL with replicas.

Each server is ``thirteen serve`` in a subprocess, so the clients and the server do not share a
GIL. Sixteen client threads each own one table of four players and play whole rounds (Deal,
four Arrange, each a non-foul split of the hand worked out in a helper process, Reveal) for a
fixed time; the same threads first call ``Health/Check`` through the same server(s) as the
baseline: what the server's gRPC stack costs with nothing behind it. Every RPC counts as a
command; latency is measured per call at the client (setup calls are not counted). The client
is in ``tests.bench.load``, the PostgreSQL schema and wait sampling in ``tests.bench.database``.

Configurations, each on a store of its own:

* SQLite (a file in a temp dir), one process: the ratio of command rate to health check rate
  (the retired target >= 0.5, printed for comparison), where a command's time goes (CPU per
  call, server and client), the ceiling (``DiagnosticsService/Echo``: the whole stack with no
  command) and issue 21's targets against it (``tests.bench.replicas``).
* SQLite with ``serve --background worker`` beside a ``thirteen worker``: the same, counting
  the serving process, with the worker's CPU per command printed apart.
* PostgreSQL, one process, in a fresh schema; then replicas on fresh schemas, each beside the
  one process (``tests.bench.replicas.postgres``): two without owners (as before issue 21),
  two and three routing to owners called round-robin (call by call, as a balancer sends them),
  and two called at each table's owner. On a two-core machine the servers, the client and
  PostgreSQL share two cores, so the CPU per process and the sessions' waits on database Locks
  (sampled from ``pg_stat_activity`` ten times a second) are printed to tell a lack of cores
  from a lock that serialises the replicas.

CPU time is measured per phase from /proc for each server, the client, its helper, PostgreSQL
(its own processes and the sessions of the servers under test), and everything else: a server
near 100% of one core is saturated; other processes above a quarter of a core are flagged,
since the figures then drop.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import time
from collections.abc import Generator, Iterator, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2

from domain.rules.cards import DECK
from service.routing.owners import owner
from service.routing.peers import CHECK_INTERVAL
from tests.bench import access, database, metrics, replicas
from tests.bench.load import (
    BUSY,
    CALL_TIMEOUT,
    CREDIT,
    ECHO_MESSAGE,
    PLAYERS,
    START_TIMEOUT,
    TABLES,
    WARMUP_SECONDS,
    Phase,
    Player,
    ServerProcess,
    Stubs,
    arrange,
    ms,
    run_phase,
)
from tests.bench.worker import DRAIN_SECONDS, WorkerProcess

__all__ = [  # what other benchmarks take from here
    "CALL_TIMEOUT",
    "CREDIT",
    "PLAYERS",
    "START_TIMEOUT",
    "ServerProcess",
    "Stubs",
    "_ms",
    "arrange",
    "report",
]

_ms = ms
HEALTH_SECONDS = 10.0
ROUND_SECONDS = 20.0
TARGET_RATIO = 0.5  # SQLite, one process: commands/s over health checks/s
TARGET_P99_MS = 50.0
CORES = os.cpu_count() or 1


@dataclass
class Run:
    health: Phase
    rounds: Phase
    echo: Phase | None = None
    worker_cpu: float | None = None  # seconds a ``thirteen worker`` spent on the rounds

    @property
    def ratio(self) -> float:
        return self.rounds.rate(self.rounds.calls) / self.health.rate(self.health.calls)


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _start(
    count: int,
    data: Path,
    env: Mapping[str, str],
    peers: bool = False,
    extra: tuple[str, ...] = (),
) -> list[ServerProcess]:
    """``count`` servers started at once (replicas on a fresh schema race at start-up); with
    ``peers``, listing each other in a peers file, and each table's owner known to all."""
    listing = data / "peers"
    if peers:
        data.mkdir(parents=True, exist_ok=True)
        listing.write_text("")
        extra += ("--peers-file", str(listing))
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(ServerProcess, data / str(i), (), env, extra) for i in range(count)]
    started = [f.result() for f in futures if f.exception() is None]
    failed = [error for f in futures if (error := f.exception()) is not None]
    if failed:
        for server in started:
            server.stop()
        raise failed[0]
    if peers:
        listing.write_text("".join(f"{server.address}\n" for server in started))
        time.sleep(3 * CHECK_INTERVAL)  # every replica has checked the others since
    return started


def _cpu(phase: Phase) -> str:
    cpu, seconds = phase.cpu, phase.seconds
    names = ["server"] if len(cpu.servers) == 1 else [f"server {c}" for c in "ABCDEFGH"]
    busy = cpu.other / seconds
    return (
        "    CPU  "
        + "   ".join(f"{n} {c / seconds:4.0%}" for n, c in zip(names, cpu.servers, strict=False))
        + f" of a core ({phase.server_cpu / phase.calls * 1e6:,.0f} us per call)   "
        f"client {cpu.client / seconds:4.0%}   helper {cpu.helper / seconds:4.0%}   "
        + (f"PostgreSQL {cpu.postgres / seconds:4.0%}   " if phase.sampled is not None else "")
        + f"other {busy:4.0%}   in all {cpu.machine / seconds:.2f} of {CORES} cores "
        f"({cpu.machine / seconds / CORES:.0%})"
        + (
            f"   (the machine was busy: figures are low; busiest other process "
            f"{cpu.busiest[0]!r} {cpu.busiest[1] / seconds:.0%})"
            if busy > BUSY
            else ""
        )
    )


def _health_line(phase: Phase) -> str:
    samples = phase.every
    return (
        f"  health (grpc.health.v1.Health/Check)   calls/s {phase.rate(phase.calls):>7,.0f}   "
        f"p50 {ms(samples, 0.5):6.2f} ms   p99 {ms(samples, 0.99):6.2f} ms   "
        f"over {phase.seconds:.0f} s"
    )


def _echo_lines(phase: Phase, health: Phase) -> str:
    """The ceiling: calls that cross every interceptor with a command-sized message and do
    nothing else. Commands cannot beat this rate with this client on this machine."""
    samples = phase.every
    rate = phase.rate(phase.calls)
    return (
        f"  echo (thirteen.v1.DiagnosticsService/Echo, {len(ECHO_MESSAGE)} bytes each way: our "
        f"interceptors, no command)   calls/s {rate:>7,.0f}   p50 {ms(samples, 0.5):6.2f} ms   "
        f"p99 {ms(samples, 0.99):6.2f} ms   ratio to health {rate / health.rate(health.calls):5.1%}"
        f" (the most any command could reach through this stack and client)   server CPU "
        f"{phase.server_cpu / phase.calls * 1e6:,.0f} us per call, client CPU "
        f"{phase.cpu.client / phase.calls * 1e6:,.0f} us per call"
    )


def _rounds_lines(phase: Phase) -> Iterator[str]:
    samples = phase.every
    yield (
        f"  full rounds ({TABLES} tables x {PLAYERS} players)  commands/s "
        f"{phase.rate(phase.calls):>7,.0f}   "
        f"p50 {ms(samples, 0.5):6.2f} ms   p99 {ms(samples, 0.99):6.2f} ms   "
        f"over {phase.seconds:.0f} s   rounds/s {phase.rate(phase.rounds):5.1f}"
    )
    yield (
        "    "
        + "   ".join(
            f"{kind} p50 {ms(phase.latencies[kind], 0.5):6.2f} ms "
            f"p99 {ms(phase.latencies[kind], 0.99):6.2f} ms"
            for kind in ("Deal", "Arrange", "Reveal")
        )
        + f"   fouls {phase.fouls}"
    )


def _per_call(run: Run) -> str:
    """Where a command's time goes: CPU per call, command against health check."""
    health, rounds = run.health, run.rounds
    server = rounds.server_cpu / rounds.calls * 1e6
    server_health = health.server_cpu / health.calls * 1e6
    line = (
        f"    per call  server CPU {server:,.0f} us per command vs {server_health:,.0f} us per "
        f"health check (+{server - server_health:,.0f} us of the command's own work)   "
        f"client CPU {rounds.cpu.client / rounds.calls * 1e6:,.0f} us per command (and "
        f"{rounds.cpu.helper / rounds.calls * 1e6:,.0f} us of arranging in the helper) vs "
        f"{health.cpu.client / health.calls * 1e6:,.0f} us per health check"
    )
    if rounds.sampled is not None:
        line += f"   PostgreSQL CPU {rounds.cpu.postgres / rounds.calls * 1e6:,.0f} us per command"
    return line


def _waits(phase: Phase, sampler: database.WaitSampler) -> str:
    waits = phase.sampled
    assert isinstance(waits, database.Waits)
    if sampler.error is not None or not waits.samples:
        return f"    PostgreSQL waits: not sampled ({sampler.error!r})"
    on = ", ".join(f"{what} {waits.share(n):.0%}" for what, n in waits.on.most_common(4))
    doing = ", ".join(f"{what} {waits.share(n):.0%}" for what, n in waits.doing.most_common(4))
    return (
        f"    PostgreSQL sessions of the schema ({waits.samples} samples over the rounds): "
        f"{waits.sessions / waits.samples:.1f} open, {waits.busy / waits.samples:.1f} busy on "
        f"average; some session waiting on a Lock in {waits.any_locked / waits.samples:.0%} of "
        f"samples; of the busy sessions' samples {waits.share(waits.locked):.0%} wait on a "
        f"Lock{f' ({on})' if on else ''}, the rest: {doing or '-'}"
    )


def _configuration(
    title: str,
    count: int,
    data: Path,
    env: Mapping[str, str],
    helper: Executor,
    application: str | None = None,
    echo: bool = False,
    routing: str = "",
    worker: bool = False,
) -> Generator[str, None, Run]:
    """Health checks, then full rounds, through ``count`` servers on one store; on PostgreSQL
    the sessions named ``application`` are sampled in each phase. With ``echo``, also
    ``DiagnosticsService/Echo`` calls between the two: the ceiling of the command rate. With
    ``routing`` the servers list each other as peers, and the clients call them in turn
    (``round-robin``) or each table's owner (``owner``). With ``worker``, the server runs
    ``--background worker`` beside a ``thirteen worker``, whose CPU is counted apart."""
    yield title
    background = ("--background", "worker") if worker else ()
    servers = _start(count, data, env, peers=bool(routing), extra=background)
    working = WorkerProcess(data / "0", env) if worker else None
    channels = [grpc.insecure_channel(server.address) for server in servers]
    try:
        stubs = [Stubs.on(channel) for channel in channels]
        for each in stubs:
            answer = each.health.Check(health_pb2.HealthCheckRequest(), timeout=START_TIMEOUT)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        addresses = [server.address for server in servers]

        def owner_of(table_id: str) -> int:
            return addresses.index(str(owner(table_id, addresses)))

        direct = owner_of if routing == "owner" else None
        players = [Player(stubs, i, helper, direct) for i in range(TABLES)]
        with ThreadPoolExecutor(TABLES) as pool:
            list(pool.map(Player.setup, players))

        sampler = database.WaitSampler(application) if application else None
        health = run_phase(servers, players, Player.health, HEALTH_SECONDS, helper, sampler)
        yield _health_line(health)
        yield _cpu(health)
        echoed = None
        if echo:
            echoed = run_phase(servers, players, Player.echo, HEALTH_SECONDS, helper, None)
            yield _echo_lines(echoed, health)
            yield _cpu(echoed)
        sampler = database.WaitSampler(application) if application else None
        worked = working.cpu_seconds() if working is not None else 0.0
        rounds = run_phase(servers, players, Player.round, ROUND_SECONDS, helper, sampler)
        yield from _rounds_lines(rounds)
        yield _cpu(rounds)
        if sampler is not None:
            yield _waits(rounds, sampler)
        run = Run(health, rounds, echoed)
        if working is not None:
            time.sleep(DRAIN_SECONDS)  # the worker takes in what the rounds stored
            run.worker_cpu = working.cpu_seconds() - worked
            yield (
                f"    worker (thirteen worker, apart from the server above): "
                f"{run.worker_cpu / rounds.calls * 1e6:,.0f} us of CPU per command"
            )
        yield _per_call(run)
        return run
    finally:
        for channel in channels:
            channel.close()
        for server in servers:
            server.stop()
        if working is not None:
            working.stop()


def _targets(run: Run, ratio: float | None) -> str:
    p99 = ms(run.rounds.every, 0.99)
    text = f"  commands/s / health calls/s  {run.ratio:5.1%}"
    if ratio is not None:
        text += f"   (target >= {ratio:.0%}: {_verdict(run.ratio >= ratio)})"
    return (
        text + f"   command p99 {p99:.1f} ms (target <= {TARGET_P99_MS:.0f} ms: "
        f"{_verdict(p99 <= TARGET_P99_MS)})"
    )


def _budget(run: Run, ratio: float) -> str:
    """What ``ratio`` leaves a command on this machine, from this run's own figures: at that
    rate one server process (one GIL) can spend at most 1/rate of CPU per command whatever the
    cores, and the whole machine CORES/rate for the client and the server together."""
    rate = ratio * run.health.rate(run.health.calls)
    calls = run.rounds.calls
    client = run.rounds.cpu.client / calls * 1e6
    helper = run.rounds.cpu.helper / calls * 1e6
    machine = CORES / rate * 1e6
    echo = (
        f"; an echo (no command) costs it {run.echo.server_cpu / run.echo.calls * 1e6:,.0f} us"
        if run.echo is not None
        else ""
    )
    return (
        f"  what the target leaves a command here: at {ratio:.0%} = {rate:,.0f} commands/s one "
        f"server process can spend at most {1e6 / rate:,.0f} us of CPU per command{echo}, a "
        f"command {run.rounds.server_cpu / calls * 1e6:,.0f} us; the {CORES} cores give "
        f"{machine:,.0f} us per command to the client and the server(s) together, of which the "
        f"client takes {client:,.0f} us (+{helper:,.0f} us arranging): "
        f"{machine - client - helper:,.0f} us would be left for every server process together"
    )


def report() -> Iterator[str]:
    """The figures, line by line as they are measured (about 2 to 3 minutes)."""
    data = Path(tempfile.mkdtemp(prefix="thirteen-bench-"))
    yield (
        f"service over gRPC (servers: `thirteen serve` subprocesses; clients: {TABLES} threads, "
        f"a table of {PLAYERS} players each, sync grpc, one channel per server, arrangements in "
        f"a helper process; warm-up {WARMUP_SECONDS:.0f} s, health {HEALTH_SECONDS:.0f} s, "
        f"rounds {ROUND_SECONDS:.0f} s; {CORES} cores)"
    )
    helper = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    helper.submit(arrange, [str(c) for c in DECK[:13]]).result()  # before any channel exists
    try:
        sqlite = yield from _configuration(
            " SQLite (a file in a temp dir), 1 process",
            1,
            data / "sqlite",
            {"THIRTEEN_STORE": "sqlite"},
            helper,
            echo=True,
        )
        yield _targets(sqlite, TARGET_RATIO)
        yield _budget(sqlite, TARGET_RATIO)
        assert sqlite.echo is not None
        yield replicas.against_echo(sqlite.rounds, sqlite.echo, "SQLite, 1 process")
        yield replicas.tail("SQLite, 1 process", sqlite.rounds)
        working = yield from _configuration(
            " SQLite, serve --background worker beside a thirteen worker (the projector and the "
            "transparency log in the worker)",
            1,
            data / "sqlite-worker",
            {"THIRTEEN_STORE": "sqlite"},
            helper,
            echo=True,
            worker=True,
        )
        assert working.echo is not None
        yield replicas.against_echo(working.rounds, working.echo, "SQLite with a worker")
        yield replicas.tail("SQLite with a worker", working.rounds)
        yield access.line(sqlite.rounds.server_cpu / sqlite.rounds.calls * 1e6)
        yield metrics.line(sqlite.rounds.server_cpu / sqlite.rounds.calls * 1e6)

        reason = database.unreachable()
        if reason is not None:
            yield f" PostgreSQL figures skipped: {reason}"
            return
        yield from replicas.postgres(data, helper, _configuration, _targets, worker=True)
    finally:
        helper.shutdown()
        shutil.rmtree(data, ignore_errors=True)
