"""Issue 10 attacked from outside: two ``thirteen serve`` replicas on one PostgreSQL schema take
their own commits from memory (the follower, the watch streams, the projector, the
transparency log's appender) while the other one commits between them. Rounds are played and
the same wallets credited through both at once (commits lose races and roll back, so the log
skips numbers); watch streams follow each table on the replica that does not play it; one
replica is killed with SIGKILL in the middle of the load and started again. Then nothing was
skipped, repeated or reordered anywhere: each stream holds every event of its table once, in
order; the live views equal a rebuild (``thirteen projections rebuild``) and keep the ledger's
invariants; every stored event is the tree's leaf in order; ``thirteen audit --all`` passes.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from domain.ids import round_uuid, table_uuid
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from service.opening import open_app
from service.rpc.watch import TABLE_AND_ROUND_TOPICS
from service.transparency.store import TreeStore
from tests.e2e.helpers import seated_table, showdowns, wait_until
from tests.e2e.test_witness import keys
from tests.integration.test_attack_log_feed_units import assert_view_invariants, leaves_are_events
from tests.support.cli import thirteen
from tests.support.serve_process import ServeProcess
from tests.support.stores import store_environ

PLAYERS = {"wa": ["a1", "a2", "a3"], "wb": ["b1", "b2", "b3"]}


class Stream:
    """A WatchTable stream read on a thread of its own; ``seen`` keeps every message."""

    def __init__(self, server: ServeProcess, table_id: str, after: int = 0) -> None:
        request = table_pb2.WatchTableRequest(table_id=table_id, after=after)
        self.call = server.tables.WatchTable(request, timeout=120)
        self.seen: list[Any] = []
        self.ended: str = ""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        try:
            for message in self.call:
                self.seen.append(message)
        except grpc.RpcError as error:
            self.ended = error.code().name

    def last(self) -> int:
        return self.seen[-1].position if self.seen else 0

    def close(self) -> None:
        self.call.cancel()
        self.thread.join(timeout=10)


def credits_racing(
    servers: list[ServeProcess | None], stop: threading.Event, tag: str
) -> Callable[[], None]:
    """Credits of every player through whichever replica is up, again and again (so the
    replicas' writers race on the same wallets); calls to a killed replica may fail."""
    everyone = [p for players in PLAYERS.values() for p in players]
    rng = random.Random(tag)

    def run() -> None:
        k = 0
        while not stop.is_set():
            k += 1
            server = servers[rng.randrange(2)]
            if server is None:
                continue
            request = wallet_pb2.CreditRequest(
                player_id=rng.choice(everyone), amount=1, transfer_id=f"{tag}-{k}"
            )
            # The replica was killed under the call, or stopped (its channel closed) after
            # this thread picked it.
            with contextlib.suppress(grpc.RpcError, ValueError):
                server.wallets.Credit(request, timeout=10)

    return run


def table_positions(app: Any, table: str, rounds: list[str]) -> list[int]:
    """The positions of the table's own events and its rounds', as the log holds them."""
    streams = {table_uuid(table), *(round_uuid(r) for r in rounds)}
    return [
        n.id
        for n in app.recorder.select_notifications(start=1, limit=10**6)
        if n.originator_id in streams and n.topic in TABLE_AND_ROUND_TOPICS
    ]


def assert_rebuilt_alike_and_audited(
    app: Any, environ: dict[str, str], data: Path, stored: int, log_pub: str
) -> dict[str, Any]:
    """The live views equal what ``thirteen projections rebuild`` makes of the log (tracking
    included) and keep the ledger's invariants, every stored event is a leaf of the tree in
    order, and ``thirteen audit --all`` passes: its report."""
    views, _ = app.database.views()
    try:
        live = views.dump()
        views.close()
        done = thirteen("projections", "rebuild", "--data", str(data), env=environ)
        assert done.returncode == 0, done.stderr[-2000:]
        rebuilt = views.dump()
        assert live.keys() == rebuilt.keys()
        for table in rebuilt:
            assert live[table] == rebuilt[table], table
        assert_view_invariants(rebuilt)
        assert leaves_are_events(app, TreeStore(app)) == stored
    finally:
        views.close()
    audited = thirteen(
        "audit", "--all", "--json", "--data", str(data), "--log-public-key", log_pub, env=environ
    )
    report: dict[str, Any] = json.loads(audited.stdout)
    assert audited.returncode == 0 and report["ok"], audited.stdout[-2000:] + audited.stderr
    return report


def test_replicas_killed_and_raced_feed_every_reader_exactly_the_log(tmp_path: Path) -> None:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/attack-log-feed")
    log_key = tmp_path / "log" / "log.key"
    data = tmp_path / "data"
    with store_environ("postgres", tmp_path) as environ:

        def serve() -> ServeProcess:
            return ServeProcess(
                data, "--log-key", str(log_key), "--checkpoint-interval", "0.2", environ=environ
            )

        a = serve()
        for role in ("projector", "transparency_log"):  # the one killed leads both

            def leads(role: str = role) -> bool:
                return any(f"{role}_leading" in line for line in a.lines)

            wait_until(leads, f"replica A's {role} to lead", 20)
        b = serve()
        servers: list[ServeProcess | None] = [a, b]
        streams: list[Stream] = []
        rounds: dict[str, list[str]] = {"wa": [], "wb": []}
        stop = threading.Event()
        racing: list[threading.Thread] = []
        try:
            seated_table(a, "wa", dict.fromkeys(PLAYERS["wa"], 100_000))
            seated_table(b, "wb", dict.fromkeys(PLAYERS["wb"], 100_000))
            # Each table is watched on the replica that does not play it.
            on_b, on_a = Stream(b, "wa"), Stream(a, "wb")
            racing = [
                threading.Thread(target=credits_racing(servers, stop, f"race{k}")) for k in range(4)
            ]
            for thread in racing:
                thread.start()
            played_b: list[str] = []
            plays_b = threading.Thread(target=lambda: played_b.extend(showdowns(b, "wb", 6)))
            plays_b.start()
            rounds["wa"] += showdowns(a, "wa", 3)
            # Killed in the middle of the load: credits in flight on it, B still playing.
            servers[0] = None
            a.kill()
            a = serve()
            servers[0] = a
            after_kill = Stream(a, "wb", after=on_a.last())  # resumes where the dead one was
            rounds["wa"] += showdowns(a, "wa", 3)
            plays_b.join()
            rounds["wb"] += played_b
            stop.set()
            for thread in racing:
                thread.join()
            reader = open_app(tmp_path / "reader", environ=environ, seed_key=data / "seed.key")
            try:
                expected = {t: table_positions(reader, t, rounds[t]) for t in rounds}
                top = reader.max_position()
                positions = [
                    n.id for n in reader.recorder.select_notifications(start=1, limit=10**6)
                ]
                stored = len(positions)
                skipped = [p for p in range(1, top) if p not in set(positions)]
                tree = TreeStore(reader)
                wait_until(lambda: tree.state().size == stored, "the tree to hold every event", 20)
            finally:
                reader.close()
            assert top > stored, "no commit lost a race: the log skipped no number"

            def caught_up() -> bool:
                wb = max(on_a.last(), after_kill.last())
                return on_b.last() >= expected["wa"][-1] and wb >= expected["wb"][-1]

            wait_until(caught_up, "the streams to reach the last events of their tables", 20)
            streams = [on_b, on_a, after_kill]
            assert [m.position for m in on_b.seen] == expected["wa"]
            assert [m.position for m in on_a.seen + after_kill.seen] == expected["wb"]
            # What the committing replica shows from memory is what the other read from the log.
            again = Stream(a, "wa")
            streams.append(again)
            wait_until(lambda: again.last() >= expected["wa"][-1], "a catch-up stream", 20)
            assert again.seen == on_b.seen  # (maps: compared as maps, not as bytes)
            # Streams that resume anywhere, on either replica: in a number the log skipped,
            # in the middle, at the table's last event (nothing to catch up).
            for table, want in expected.items():
                middle = want[len(want) // 2]
                for after in (skipped[0], skipped[-1], middle, want[-2]):
                    for server in (a, b):
                        resumed = Stream(server, table, after=after)
                        streams.append(resumed)
                        rest = [p for p in want if p > after]
                        if rest:

                            def reached(stream: Stream = resumed, last: int = rest[-1]) -> bool:
                                return stream.last() >= last

                            wait_until(reached, "a resumed stream to reach its table's last", 20)
                        else:
                            time.sleep(0.3)
                        assert [m.position for m in resumed.seen] == rest, (table, after)
        finally:
            stop.set()
            for thread in racing:
                thread.join()
            for stream in streams:
                stream.close()
            for server in (a, b):
                server.stop()

        # Stopped gracefully: the leader drained the views. Live views against a rebuild.
        app = open_app(tmp_path / "reader", environ=environ, seed_key=data / "seed.key")
        try:
            report = assert_rebuilt_alike_and_audited(app, environ, data, stored, log_pub)
        finally:
            app.close()
        assert sorted(r["round_id"] for r in report["rounds"]) == sorted(
            rounds["wa"] + rounds["wb"]
        )


def test_a_sqlite_server_killed_in_the_middle_of_load_feeds_every_reader_exactly_the_log(
    tmp_path: Path,
) -> None:
    """The same on SQLite, where the one serving process takes what it committed from memory up
    to its newest commit without asking the log: a server killed with SIGKILL while credits and
    rounds are under way, then started again, leaves streams that resume with every event of
    their tables once and in order, views equal to a rebuild, every event a leaf, and an audit
    that passes."""
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/attack-log-feed-sqlite")
    log_key = tmp_path / "log" / "log.key"
    data = tmp_path / "data"
    sqlite = {"THIRTEEN_STORE": "sqlite"}

    def serve() -> ServeProcess:
        return ServeProcess(data, "--log-key", str(log_key), "--checkpoint-interval", "0.2")

    server = serve()
    servers: list[ServeProcess | None] = [server, server]
    streams: list[Stream] = []
    rounds: dict[str, list[str]] = {"wa": [], "wb": []}
    stop = threading.Event()
    racing: list[threading.Thread] = []
    try:
        for table, players in PLAYERS.items():
            seated_table(server, table, dict.fromkeys(players, 100_000))
        first = {t: Stream(server, t) for t in PLAYERS}
        racing = [
            threading.Thread(target=credits_racing(servers, stop, f"race{k}")) for k in range(3)
        ]
        for thread in racing:
            thread.start()
        for table in PLAYERS:
            rounds[table] += showdowns(server, table, 3)
        servers[:] = [None, None]
        server.kill()
        server = serve()
        servers[:] = [server, server]
        second = {t: Stream(server, t, after=first[t].last()) for t in PLAYERS}
        for table in PLAYERS:
            rounds[table] += showdowns(server, table, 3)
        stop.set()
        for thread in racing:
            thread.join()
        reader = open_app(data, environ=sqlite)
        try:
            expected = {t: table_positions(reader, t, rounds[t]) for t in rounds}
            stored = reader.max_position()
            tree = TreeStore(reader)
            wait_until(lambda: tree.state().size == stored, "the tree to hold every event", 20)
        finally:
            reader.close()
        streams = [*first.values(), *second.values()]

        def caught_up() -> bool:
            return all(max(first[t].last(), second[t].last()) >= expected[t][-1] for t in PLAYERS)

        wait_until(caught_up, "the streams to reach the last events of their tables", 20)
        for table in PLAYERS:
            positions = [m.position for m in first[table].seen + second[table].seen]
            assert positions == expected[table], table
    finally:
        stop.set()
        for thread in racing:
            thread.join()
        for stream in streams:
            stream.close()
        server.stop()

    app = open_app(data, environ=sqlite)
    try:
        assert_rebuilt_alike_and_audited(app, sqlite, data, stored, log_pub)
    finally:
        app.close()
