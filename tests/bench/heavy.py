"""What the heaviest reads do to everyone else (issue 22, finding 1): a normal game (16 tables
playing whole rounds) alone, then beside 4 hostile callers of each heavy read in turn, asking
for the largest page (100 rounds, the cap) over and over:

- ``ListRounds`` from the start of a table of 1,200 rounds;
- ``ListRounds`` at random page tokens deep into that table;
- ``ListRoundResults`` of that table and ``ListPlayerRounds`` of one of its players (2 callers
  each), at random page tokens.

The normal load's p99 beside each is printed against its p99 alone in the phases just before
and after (target: at most 2x), with the hostile callers' own rate and a page's size, and how
much of the machine other processes used in each phase (the machine is shared: its other work
moves the figures more than anything measured here). The hostile callers run in a process of their
own and do not decode what they are sent, as callers on other machines would not share the
game client's interpreter. SQLite, one ``thirteen serve``."""

from __future__ import annotations

import multiprocessing
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import grpc

from domain.rules.cards import DECK
from service._generated.thirteen.v1 import results_pb2, results_pb2_grpc, table_pb2
from service.rpc import paging
from tests.bench.load import (
    CALL_TIMEOUT,
    TABLES,
    Phase,
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
HEAVY_ROUNDS = 1_200  # on the hostile callers' table: twelve pages
PAGE = 2**31 - 1  # served as the cap
TARGET = 2.0  # the normal load's p99 beside the hostile callers / alone


@dataclass(frozen=True)
class Hostile:
    """One kind of hostile caller: ``method`` with requests from ``requests``."""

    name: str
    calls: tuple[tuple[str, str], ...]  # (method path, kind of request) for each caller


def _requests(kind: str, table_id: str, player_id: str, positions: list[int]) -> Any:
    """An endless supply of serialized requests of ``kind``."""
    rng = random.Random(kind)
    while True:
        if kind == "first":
            yield table_pb2.ListRoundsRequest(table_id=table_id, page_size=PAGE)
        elif kind == "deep":
            token = paging.token(f"t:{table_id}", rng.randrange(HEAVY_ROUNDS - 100))
            yield table_pb2.ListRoundsRequest(table_id=table_id, page_size=PAGE, page_token=token)
        elif kind == "results":
            token = paging.token(f"results:{table_id}", rng.randrange(HEAVY_ROUNDS - 100))
            yield results_pb2.ListRoundResultsRequest(
                table_id=table_id, page_size=PAGE, page_token=token
            )
        else:
            before = rng.choice(positions[100:])
            yield results_pb2.ListPlayerRoundsRequest(
                player_id=player_id,
                page_size=PAGE,
                page_token=paging.token(f"recall:{player_id}", before),
            )


def _caller(
    address: str,
    method: str,
    kind: str,
    table_id: str,
    player_id: str,
    positions: list[int],
    stop: Event,
    tally: Any,
) -> None:
    with grpc.insecure_channel(address) as channel:
        call: Any = channel.unary_unary(method, request_serializer=lambda m: m.SerializeToString())
        for request in _requests(kind, table_id, player_id, positions):
            if stop.is_set():
                return
            answer = call(request, timeout=CALL_TIMEOUT)  # bytes: not decoded
            with tally.get_lock():
                tally[0] += 1
                tally[1] += len(answer)


def _hostile_process(
    address: str,
    calls: tuple[tuple[str, str], ...],
    table_id: str,
    player_id: str,
    positions: list[int],
    stop: Event,
    tally: Any,
) -> None:
    """The hostile callers, one thread (and channel) each, in a process of their own."""
    threads = [
        threading.Thread(
            target=_caller,
            args=(address, method, kind, table_id, player_id, positions, stop, tally),
        )
        for method, kind in calls
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


ROUNDS = "/thirteen.v1.TableService/ListRounds"
RESULTS = "/thirteen.v1.ResultsService/ListRoundResults"
RECALL = "/thirteen.v1.ResultsService/ListPlayerRounds"
HOSTILE = (
    Hostile("ListRounds, the first page", ((ROUNDS, "first"),) * HEAVY_CALLERS),
    Hostile("ListRounds, random deep page tokens", ((ROUNDS, "deep"),) * HEAVY_CALLERS),
    Hostile(
        "ListRoundResults and ListPlayerRounds, random deep page tokens",
        ((RESULTS, "results"), (RECALL, "recall")) * (HEAVY_CALLERS // 2),
    ),
)


def _positions(stubs: Stubs, channel: grpc.Channel, player_id: str) -> list[int]:
    """Positions that page tokens of the player's recall may hold: the player's rounds', read
    by paging through (the tokens name where a page ends)."""

    results = results_pb2_grpc.ResultsServiceStub(channel)
    found: list[int] = []
    token = ""
    while True:
        request = results_pb2.ListPlayerRoundsRequest(
            player_id=player_id, page_size=1, page_token=token
        )
        answer = results.ListPlayerRounds(request, timeout=CALL_TIMEOUT)
        token = answer.next_page_token
        if not token or len(found) >= HEAVY_ROUNDS:
            return sorted(found)
        found.append(paging.page(f"recall:{player_id}", 1, token)[0])


def report() -> Iterator[str]:
    """The figures, line by line (about five minutes)."""
    data = Path(tempfile.mkdtemp(prefix="thirteen-bench-heavy-"))
    spawn = multiprocessing.get_context("spawn")
    helper = ProcessPoolExecutor(1, mp_context=spawn)
    helper.submit(arrange, [str(c) for c in DECK[:13]]).result()  # before any channel exists
    server = ServerProcess(data / "s", (), {"THIRTEEN_STORE": "sqlite"})
    channel = grpc.insecure_channel(server.address)
    try:
        stubs = Stubs.on(channel)
        yield (
            f"heavy reads beside a game (SQLite, {TABLES} tables playing rounds for "
            f"{ROUND_SECONDS:.0f} s a phase; {HEAVY_CALLERS} hostile callers, page_size {PAGE}, "
            f"at a table of {HEAVY_ROUNDS:,} rounds)"
        )
        heavy = Player([stubs], TABLES, helper)
        heavy.setup()
        started = time.perf_counter()
        for _ in range(HEAVY_ROUNDS):
            heavy.round(Tally())
        yield f"  ({HEAVY_ROUNDS:,} rounds played in {time.perf_counter() - started:.0f} s)"
        victim = heavy.players[0]
        positions = _positions(stubs, channel, victim)
        players = [Player([stubs], i, helper) for i in range(TABLES)]
        with ThreadPoolExecutor(TABLES) as pool:
            list(pool.map(Player.setup, players))
        # The game alone before and after each hostile phase: the machine is shared, and its
        # other work drifts; each hostile phase is judged against the two beside it.
        alone = [_alone(server, players, helper)]
        yield _line("the game alone", alone[-1])
        worst = 0.0
        for hostile in HOSTILE:
            stop, tally = spawn.Event(), spawn.Array("d", 2)
            process = spawn.Process(
                target=_hostile_process,
                args=(
                    server.address,
                    hostile.calls,
                    heavy.table_id,
                    victim,
                    positions,
                    stop,
                    tally,
                ),
            )
            process.start()
            began = time.perf_counter()
            try:
                beside = run_phase([server], players, Player.round, ROUND_SECONDS, helper)
            finally:
                stop.set()
                process.join(CALL_TIMEOUT)
            rate = tally[0] / (time.perf_counter() - began)
            alone.append(_alone(server, players, helper))
            p99_alone = (ms(alone[-2].every, 0.99) + ms(alone[-1].every, 0.99)) / 2
            ratio = ms(beside.every, 0.99) / p99_alone
            worst = max(worst, ratio)
            yield (
                _line(f"beside {len(hostile.calls)} callers of {hostile.name}", beside)
                + f" = {ratio:.2f}x the p99 alone before and after ({p99_alone:.1f} ms); they "
                f"read {rate:,.1f} pages/s of {tally[1] / max(tally[0], 1) / 1024:,.0f} KiB"
            )
            yield _line("the game alone", alone[-1])
        yield (
            f"  the worst p99 beside / alone {worst:.2f}x (target <= {TARGET:.0f}x: "
            f"{'met' if worst <= TARGET else 'MISSED'})"
        )
    finally:
        channel.close()
        server.stop()
        helper.shutdown()
        shutil.rmtree(data, ignore_errors=True)


def _alone(server: ServerProcess, players: list[Player], helper: Executor) -> Phase:
    return run_phase([server], players, Player.round, ROUND_SECONDS, helper)


def _line(what: str, phase: Phase) -> str:
    """A phase's figures, with how much of the machine other processes used meanwhile."""
    other = phase.cpu.other / phase.seconds  # the hostile callers' process included
    return (
        f"  {what}: {phase.rate(phase.calls):,.0f} commands/s, p50 {ms(phase.every, 0.5):.1f} "
        f"ms, p99 {ms(phase.every, 0.99):.1f} ms (other processes: {other:.1f} cores)"
    )
