"""The soak's memory part: does a real ``thirteen serve`` level off?

Client threads play whole rounds (Deal, one Arrange per player, Reveal) at tables of 2 and of 4
players against one ``thirteen serve``, each round at a fresh round id as in production, while
the server's resident size (``VmRSS`` from ``/proc/<pid>/status``) is read every ``every``
rounds. Then ``streams`` WatchTable streams are opened, read and cancelled, in batches, and the
size read after each batch.

The verdict (``Curve.levelled``): after a warm-up long enough to fill every cache to its bound
(``warmup_rounds``), the size at the end of the run is at most ``GROWTH`` above the size half way
through it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from domain.ids import CACHED
from domain.rules.play import PARSED_PILES, STORED_PLAYS
from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc, wallet_pb2, wallet_pb2_grpc
from service.eventstore.writer import LIVE_BYTES, LIVE_SIZE
from service.transparency.store import CACHED_NODE_BYTES, NODE_WEIGHT
from tests.bench.load import ServerProcess, arrange

GROWTH = 0.05  # the most the size may grow over the last half of the measured rounds
CALL_TIMEOUT = 30.0
CREDIT = 10_000_000  # a stake of 1 a round never runs a wallet dry
PLAYERS = (2, 4)  # the tables alternate between these


# What one round adds to the caches that fill as rounds are played (at tables of 2 and 4
# players in turn: 3 players a round on average), measured on this service:
ROUND_BYTES = 26_000  # a revealed round of 2 players held in memory (``deep_size``), the least
PILES_PER_ROUND = 12  # hands and piles parsed: 3 hands, 9 piles
PLAYS_PER_ROUND = 3  # submissions parsed
EVENTS_PER_ROUND = 8  # events stored: each one a leaf of the transparency log's tree


def warmup_rounds() -> int:
    """Rounds that fill every cache that rounds fill, from the caches' bounds: the writer's
    aggregates (bytes: revealed rounds push out the rest), the parsed piles and plays, the
    ids, the log's node hashes; the largest of those, rounded up to 500. (The chain
    heads, about 300 bytes a round, fill later: they add at most 0.3 MiB a thousand rounds.)"""
    fills = {
        "aggregates": min(LIVE_SIZE, LIVE_BYTES // ROUND_BYTES),
        "piles": PARSED_PILES // PILES_PER_ROUND,
        "plays": STORED_PLAYS // PLAYS_PER_ROUND,
        "round ids": CACHED,
        "nodes": CACHED_NODE_BYTES // (NODE_WEIGHT * EVENTS_PER_ROUND),
    }
    return -(-max(fills.values()) // 500) * 500


def rss_kib(pid: int) -> int:
    """The resident size of process ``pid`` in KiB (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


@dataclass
class Curve:
    """Resident size against rounds played (and streams opened)."""

    rounds: list[tuple[int, int]] = field(default_factory=list)  # (rounds played, KiB)
    streams: list[tuple[int, int]] = field(default_factory=list)  # (streams opened, KiB)
    warmup: int = 0

    def measured(self) -> list[tuple[int, int]]:
        return [(n, kib) for n, kib in self.rounds if n >= self.warmup]

    def growth(self) -> float | None:
        """Growth over the last half of the measured rounds, as a fraction of the size half way
        through (None when too few samples were taken after the warm-up)."""
        points = self.measured()
        if len(points) < 3:
            return None
        first, last = points[0][0], points[-1][0]
        middle = min(points, key=lambda p: abs(p[0] - (first + last) / 2))
        return (points[-1][1] - middle[1]) / middle[1]

    def levelled(self) -> bool:
        growth = self.growth()
        return growth is not None and growth <= GROWTH

    def lines(self, title: str) -> list[str]:
        out = [f"{title}: resident size against rounds played (warm-up {self.warmup} rounds)"]
        out.append(f"  {'rounds':>8}  {'RSS MiB':>8}")
        for n, kib in self.rounds:
            mark = "" if n >= self.warmup else "  (warm-up)"
            out.append(f"  {n:>8}  {kib / 1024:>8.1f}{mark}")
        if self.streams:
            out.append(f"  {'streams':>8}  {'RSS MiB':>8}  (opened, read and cancelled)")
            for n, kib in self.streams:
                out.append(f"  {n:>8}  {kib / 1024:>8.1f}")
        growth = self.growth()
        if growth is None:
            out.append("  growth over the last half: too few rounds after the warm-up")
        else:
            out.append(
                f"  growth over the last half: {growth:+.1%} (at most {GROWTH:.0%}); "
                f"steady state {self.measured()[-1][1] / 1024:.0f} MiB"
            )
        return out


class Table:
    """One table of ``players`` seated players, played round after round."""

    def __init__(self, channel: grpc.Channel, name: str, players: int) -> None:
        self.wallets = wallet_pb2_grpc.WalletServiceStub(channel)
        self.tables = table_pb2_grpc.TableServiceStub(channel)
        self.table_id = name
        self.players = [f"{name}-p{i}" for i in range(players)]
        self.dealt = 0

    def open(self) -> None:
        for p in self.players:
            self.wallets.Credit(
                wallet_pb2.CreditRequest(player_id=p, amount=CREDIT, transfer_id=f"credit-{p}"),
                timeout=CALL_TIMEOUT,
            )
        self.tables.OpenTable(
            table_pb2.OpenTableRequest(
                table_id=self.table_id,
                request_id=f"open-{self.table_id}",
                ruleset_parameters=table_pb2.RulesetParameters(stake_policy="fixed", base_stake=1),
            ),
            timeout=CALL_TIMEOUT,
        )
        for p in self.players:
            self.tables.SitDown(
                table_pb2.SitDownRequest(table_id=self.table_id, player_id=p),
                timeout=CALL_TIMEOUT,
            )

    def play(self) -> None:
        """One round: Deal, every player's (greedy, rarely foul) arrangement, Reveal."""
        self.dealt += 1
        dealt = self.tables.Deal(
            table_pb2.DealRequest(
                table_id=self.table_id,
                client_seed=f"seed-{self.dealt}",
                request_id=f"d{self.dealt}",
            ),
            timeout=CALL_TIMEOUT,
        )
        for hand in dealt.hands:
            front, middle, back = arrange(list(hand.cards))
            self.tables.Arrange(
                table_pb2.ArrangeRequest(
                    round_id=dealt.round_id,
                    player_id=hand.player_id,
                    front=front,
                    middle=middle,
                    back=back,
                ),
                timeout=CALL_TIMEOUT,
            )
        self.tables.Reveal(table_pb2.RevealRequest(round_id=dealt.round_id), timeout=CALL_TIMEOUT)


class Played:
    """Rounds played so far by every client thread, and the first error one met."""

    def __init__(self) -> None:
        self.count = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.count += 1


def _player(table: Table, played: Played, until: int) -> None:
    try:
        while not played.stop.is_set() and played.count < until:
            table.play()
            played.add()
    except BaseException as error:  # reported by the sampler, which stops everyone
        played.error = played.error or error
        played.stop.set()


def _watch(channel: grpc.Channel, tables: list[Table], streams: int, batch: int) -> int:
    """Open ``streams`` WatchTable streams in batches of ``batch``, each read to its first
    answer, then cancelled; returns how many answered."""
    stub = table_pb2_grpc.TableServiceStub(channel)
    answered = 0
    calls = []
    for i in range(streams):
        table = tables[i % len(tables)]
        call = stub.WatchTable(
            table_pb2.WatchTableRequest(table_id=table.table_id, viewer=table.players[0]),
            timeout=CALL_TIMEOUT,
        )
        calls.append(call)
        if len(calls) == batch:
            for c in calls:
                next(c)  # the table's first event: the stream is open and has read the log
                answered += 1
                c.cancel()
            calls.clear()
    for c in calls:
        next(c)
        answered += 1
        c.cancel()
    return answered


def measure(
    data: Path,
    environ: Mapping[str, str],
    *,
    warmup: int,
    rounds: int | None = None,
    every: int,
    tables: int = 8,
    streams: int = 300,
    stream_batches: int = 6,
    seconds: float | None = None,
    ends_at: float | None = None,
    extra: tuple[str, ...] = (),
    report: bool = False,
) -> Curve:
    """Play ``warmup`` + ``rounds`` rounds (or until ``seconds`` have passed after the warm-up,
    whichever comes first; one of the two must be given; with ``ends_at``, a
    ``time.monotonic()``, the rounds after the warm-up end then, lasting ``seconds`` at least)
    against a fresh ``thirteen serve`` on the store ``environ`` selects; the resident size
    every ``every`` rounds, then around ``streams`` streams."""
    data.mkdir(parents=True, exist_ok=True)
    server = ServerProcess(data / "data", env=environ, extra=extra)
    curve = Curve(warmup=warmup)
    channel = grpc.insecure_channel(server.address)
    try:
        seats = [Table(channel, f"mem-{i}", PLAYERS[i % len(PLAYERS)]) for i in range(tables)]
        for table in seats:
            table.open()
        pid = server.process.pid
        played = Played()
        total = warmup + rounds if rounds is not None else 2**62
        threads = [
            threading.Thread(target=_player, args=(t, played, total), daemon=True) for t in seats
        ]
        curve.rounds.append((0, rss_kib(pid)))
        for thread in threads:
            thread.start()
        deadline: float | None = None
        mark = every
        while any(t.is_alive() for t in threads):
            time.sleep(0.05)
            if played.count >= mark:
                curve.rounds.append((played.count, rss_kib(pid)))
                if report:
                    print(
                        f"  {played.count:>8} rounds  {curve.rounds[-1][1] / 1024:8.1f} MiB",
                        flush=True,
                    )
                mark += every
            if seconds is not None and deadline is None and played.count >= warmup:
                deadline = max(time.monotonic() + seconds, ends_at or 0.0)
            if deadline is not None and time.monotonic() > deadline:
                played.stop.set()
        for thread in threads:
            thread.join()
        if played.error is not None:
            raise RuntimeError(
                f"a round failed after {played.count}: {played.error!r}\n"
                + "".join(server.stderr[-15:])
            ) from played.error
        if curve.rounds[-1][0] != played.count:
            curve.rounds.append((played.count, rss_kib(pid)))
        opened = 0
        curve.streams.append((0, rss_kib(pid)))
        for _ in range(stream_batches if streams else 0):
            opened += _watch(channel, seats, streams, batch=50)
            time.sleep(0.5)  # the server lets go of the streams it was told were cancelled
            curve.streams.append((opened, rss_kib(pid)))
    finally:
        channel.close()
        server.stop()
    return curve
