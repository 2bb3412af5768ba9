"""Issue 21's figures: replicas that add capacity, each beside its target, from one run.

- PostgreSQL, 2 replicas routing each table's commands to its owner, called round-robin (call
  by call, as a balancer sends them) ÷ 1 process: commands/s >= 1.0x, server CPU per command
  <= 1.25x; 3 replicas <= 1.3x; clients calling each table's owner directly <= 1.15x.
- SQLite, one process: server CPU per command ÷ per echo <= 2.0, commands/s ÷ echo/s >= 0.45.
- Tail latency at 16 tables in every configuration: p99 <= 3 x p50.
- Beside each ratio, its floor: what a bare health check costs more per call in the same
  configuration (the gRPC stack with N processes on these cores), and the ratio divided by it.
- From the measured CPU: the commands/s that 2, 4 and 8 replicas would reach on free cores,
  and where one PostgreSQL would stop them.

Every PostgreSQL configuration serves with ``--background worker`` beside one ``thirteen
worker``: the work no caller waits for (the views' projector, the transparency log) has left the
serving processes, whose CPU per command the targets compare; the worker's is printed apart,
with the servers' and the worker's together.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

from tests.bench import database
from tests.bench.load import Phase, ms

Configuration = Callable[..., Generator[str, None, Any]]  # ``service._configuration``
Targets = Callable[[Any, float | None], str]  # ``service._targets``
TARGET_RATIO_POSTGRES = 0.35  # the retired target against health checks, printed as before

MAX_CPU_TWO = 1.25  # 2 replicas, round-robin: server CPU per command ÷ one process's
MAX_CPU_THREE = 1.3
MAX_CPU_OWNER = 1.15  # clients calling each table's owner
MIN_RATE_TWO = 1.0  # 2 replicas, round-robin: commands/s ÷ one process's
MAX_CPU_PER_ECHO = 2.0  # SQLite: server CPU per command ÷ per echo
MIN_RATE_PER_ECHO = 0.45  # SQLite: commands/s ÷ echo/s
MAX_TAIL = 3.0  # p99 ÷ p50


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def cpu_per_call(phase: Phase) -> float:
    """Server CPU (every serving process) per call, in microseconds."""
    return phase.server_cpu / phase.calls * 1e6


def tail(name: str, phase: Phase) -> str:
    p50, p99 = ms(phase.every, 0.5), ms(phase.every, 0.99)
    return (
        f"  {name}: p99 {p99:.1f} ms / p50 {p50:.1f} ms = {p99 / p50:.2f}x "
        f"(target <= {MAX_TAIL:.0f}x: {verdict(p99 <= MAX_TAIL * p50)})"
    )


def against_echo(rounds: Phase, echo: Phase, name: str) -> str:
    """The serving process's CPU per command and commands/s against an echo's, one process."""
    cpu = cpu_per_call(rounds) / cpu_per_call(echo)
    rate = rounds.rate(rounds.calls) / echo.rate(echo.calls)
    return (
        f"  {name}: server CPU per command / per echo {cpu:.2f} ({cpu_per_call(rounds):,.0f} / "
        f"{cpu_per_call(echo):,.0f} us; target <= {MAX_CPU_PER_ECHO:.1f}: "
        f"{verdict(cpu <= MAX_CPU_PER_ECHO)})   commands/s / echo/s {rate:.2f} (target >= "
        f"{MIN_RATE_PER_ECHO:.2f}: {verdict(rate >= MIN_RATE_PER_ECHO)})"
    )


def against_one(name: str, replicas: Phase, one: Phase, max_cpu: float, min_rate: float) -> str:
    """Commands/s and server CPU per command of ``replicas`` ÷ one process's."""
    rate = replicas.rate(replicas.calls) / one.rate(one.calls)
    cpu = cpu_per_call(replicas) / cpu_per_call(one)
    line = (
        f"  {name} / 1 process: commands/s {rate:.2f}x"
        + (f" (target >= {min_rate:.1f}x: {verdict(rate >= min_rate)})" if min_rate else "")
        + f"   server CPU per command {cpu:.2f}x ({cpu_per_call(replicas):,.0f} / "
        f"{cpu_per_call(one):,.0f} us"
    )
    if max_cpu:
        line += f"; target <= {max_cpu:.2f}x: {verdict(cpu <= max_cpu)}"
    return line + ")"


def floor(replicas: Any, one: Any) -> str:
    """What the bare gRPC stack costs more with these processes on this machine (their health
    check's server CPU per call ÷ one process's: fewer calls per process are batched less by
    grpc and asyncio, and the processes contend for the cores), and the command's CPU ratio
    divided by it: what is left to the replicas' own work. For explanation only: the targets'
    verdicts stay on the raw ratio."""
    stack = cpu_per_call(replicas.health) / cpu_per_call(one.health)
    cpu = cpu_per_call(replicas.rounds) / cpu_per_call(one.rounds)
    return (
        f"    floor: a health check costs {stack:.2f}x the server CPU per call here "
        f"({cpu_per_call(replicas.health):,.0f} / {cpu_per_call(one.health):,.0f} us); the "
        f"command's {cpu:.2f}x / {stack:.2f}x = {cpu / stack:.2f}x beyond the gRPC stack's"
    )


def with_worker(replicas: Any, one: Any) -> str:
    """The worker's CPU per command (apart from the servers'), and everything together."""

    def worker_cpu(run: Any) -> float:
        return float(run.worker_cpu) / int(run.rounds.calls) * 1e6

    both = (cpu_per_call(replicas.rounds) + worker_cpu(replicas)) / (
        cpu_per_call(one.rounds) + worker_cpu(one)
    )
    return (
        f"    the worker apart: {worker_cpu(replicas):,.0f} us per command (1 process: "
        f"{worker_cpu(one):,.0f} us); servers and worker together {both:.2f}x"
    )


def extrapolated(replicas: Phase, count: int) -> Iterator[str]:
    """What N replicas would serve on cores of their own, from this run's CPU per command: a
    replica is one interpreter (one GIL), so it serves at most a core's worth of commands; the
    PostgreSQL server's CPU per command says where it stops them, core by core."""
    per_replica = cpu_per_call(replicas) * 1e-6  # seconds of a serving process per command
    postgres = replicas.cpu.postgres / replicas.calls
    yield (
        f"  on free cores (from the {count}-replica round-robin run: {per_replica * 1e6:,.0f} us "
        f"of a replica's CPU and {postgres * 1e6:,.0f} us of PostgreSQL's per command, the "
        "client not counted): "
        + "   ".join(f"{n} replicas {n / per_replica:,.0f} commands/s" for n in (2, 4, 8))
    )
    if postgres > 0:
        yield (
            f"  one PostgreSQL stops them at {1 / postgres:,.0f} commands/s per core it has "
            + "("
            + ", ".join(f"{c} cores {c / postgres:,.0f}" for c in (4, 8, 16))
            + "): "
            f"about {per_replica / postgres:.1f} replicas per PostgreSQL core "
            "(docs/scaling.md)"
        )


# PostgreSQL configurations after the single process: (title, replicas, routing)
REPLICAS = [
    ("2 replicas without owners (before issue 21), called round-robin", 2, ""),
    ("2 replicas routing to owners, called round-robin", 2, "round-robin"),
    ("2 replicas routing to owners, each table's calls sent to its owner", 2, "owner"),
    ("3 replicas routing to owners, called round-robin", 3, "round-robin"),
]


def postgres(
    data: Path,
    helper: Executor,
    configuration: Configuration,
    targets: Targets,
    worker: bool = False,
) -> Generator[str, None, None]:
    """One process, then each arrangement of replicas, each on a fresh schema, and each
    replicas' figures beside the one process's (issue 21)."""
    with database.fresh_schema() as env:
        one = yield from configuration(
            f" PostgreSQL (schema {env['POSTGRES_SCHEMA']}), 1 process",
            1,
            data / "pg1",
            env,
            helper,
            env["PGAPPNAME"],
            worker=worker,
        )
    yield targets(one, TARGET_RATIO_POSTGRES)
    yield tail("PostgreSQL, 1 process", one.rounds)
    runs: dict[tuple[int, str], Any] = {}
    for title, count, routing in REPLICAS:
        with database.fresh_schema() as env:
            run = yield from configuration(
                f" PostgreSQL (schema {env['POSTGRES_SCHEMA']}), {title}",
                count,
                data / f"pg{count}{routing}",
                env,
                helper,
                env["PGAPPNAME"],
                routing=routing,
                worker=worker,
            )
        runs[count, routing] = run
        yield tail(title, run.rounds)
        health = run.health.rate(run.health.calls) / one.health.rate(one.health.calls)
        yield f"  health calls/s {count} replicas / 1 process {health:4.2f}x (for comparison)"
    yield " Replicas against one process (issue 21), from this run"
    goals = [
        ((2, ""), 0.0, 0.0),
        ((2, "round-robin"), MAX_CPU_TWO, MIN_RATE_TWO),
        ((2, "owner"), MAX_CPU_OWNER, 0.0),
        ((3, "round-robin"), MAX_CPU_THREE, 0.0),
    ]
    for (title, _, _), (key, max_cpu, min_rate) in zip(REPLICAS, goals, strict=True):
        yield against_one(title, runs[key].rounds, one.rounds, max_cpu, min_rate)
        yield floor(runs[key], one)
        if worker:
            yield with_worker(runs[key], one)
    yield from extrapolated(runs[2, "round-robin"].rounds, 2)
