"""Game recall (``ListPlayerRounds``) attacked as an unlucky production would: views that lag
behind the log (a busy projector, a restart, ``kill -9``), a replica answering while another
process keeps the views, views of an earlier schema rebuilt while serving, rounds revealed while
a client pages, absurd page sizes and ids at the limits. Real servers on both stores, real
``thirteen serve`` processes where a process must die."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from projections.store import SCHEMA_VERSION
from service._generated.thirteen.v1 import (
    results_pb2,
    results_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2_grpc,
)
from service.eventstore.locks import AdvisoryLock
from service.eventstore.postgres import settings as postgres_settings
from service.opening import open_app
from tests.e2e.helpers import (
    WAIT,
    arrange_well,
    assert_refused,
    credit,
    deal,
    open_table,
    reveal,
    seated_table,
    showdowns,
    sit,
    unarranged_rounds,
    wait_until,
)
from tests.e2e.test_player_rounds_upgrade import _as_schema_2
from tests.e2e.test_replicas import Replica
from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ

PLAYERS = ["hero", "villain"]
SQLITE = {"THIRTEEN_STORE": "sqlite"}


def recall(server: Any, player: str, size: int = 0, token: str = "") -> Any:
    return server.results.ListPlayerRounds(
        results_pb2.ListPlayerRoundsRequest(player_id=player, page_size=size, page_token=token)
    )


def ids(page: Any) -> list[str]:
    return [r.round_id for r in page.rounds]


def play(server: Any, table: str, rounds: int, players: list[str] | None = None) -> list[str]:
    """``rounds`` showdowns at ``table``; with ``players`` it is opened and they are seated
    first. Their round ids in order."""
    if players is not None:
        for k, player in enumerate(players):
            credit(server, player, 10**6, f"start-{table}-{k}")  # ids may be too long for one
        open_table(server, table)
        for player in players:
            sit(server, table, player)
    return showdowns(server, table, rounds)


def caught_up(server: ServerThread) -> None:
    assert server.running.projector.wait(server.app.max_position(), timeout=WAIT)


@contextlib.contextmanager
def views_held(store: dict[str, str], data: Path) -> Iterator[None]:
    """The views' writer kept waiting (a busy or slow projector): SQLite's write lock on the
    views file, or PostgreSQL's EXCLUSIVE lock on their tracking table. Readers still read."""
    if store["THIRTEEN_STORE"] == "sqlite":
        conn = sqlite3.connect(data / "views.sqlite", isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    import psycopg

    pg = psycopg.connect(
        host=store["POSTGRES_HOST"],
        port=store["POSTGRES_PORT"],
        user=store["POSTGRES_USER"],
        dbname=store["POSTGRES_DBNAME"],
    )
    try:
        schema = store["POSTGRES_SCHEMA"]
        pg.execute(f'LOCK TABLE "{schema}".thirteen_view_tracking IN EXCLUSIVE MODE')
        yield
    finally:
        pg.rollback()
        pg.close()


# --- read-your-writes: a round over before the call is in the answer ------------------------


def test_r10_4_a_round_revealed_before_the_call_is_recalled_while_the_views_lag(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    """A Reveal answered, then recall asked while the projector has not written the round yet
    (held here): the answer waits for the views rather than leave the last game out. On
    PostgreSQL the recall is asked of a second server that does not keep the views."""
    keeper = start_server()
    asked = start_server() if store["THIRTEEN_STORE"] == "postgres" else keeper
    first = play(keeper, "t", 1, PLAYERS)
    caught_up(keeper)
    with ThreadPoolExecutor(1) as pool:
        with views_held(store, tmp_path / "data"):
            last = play(asked, "t", 1)
            answer: Future[Any] = pool.submit(recall, asked, "hero")
            time.sleep(0.3)  # the call is in; the views are still behind it
        got = answer.result(timeout=WAIT)
    assert ids(got) == last + first


def test_recall_of_views_that_cannot_catch_up_is_unavailable_not_a_stale_list(
    server: ServerThread, store: dict[str, str], tmp_path: Path
) -> None:
    """Past the bound, the answer says the views are behind and to retry; it never lists the
    player's rounds without the last one."""
    play(server, "t", 1, PLAYERS)
    caught_up(server)
    with views_held(store, tmp_path / "data"):
        play(server, "t", 1)
        assert_refused(
            server.results.ListPlayerRounds,
            results_pb2.ListPlayerRoundsRequest(player_id="hero"),
            grpc.StatusCode.UNAVAILABLE,
            "UNAVAILABLE",
            says="retry",
        )


# --- restarts ----------------------------------------------------------------------------------


class Served(SimpleNamespace):
    """A ``thirteen serve`` process with the stubs the helpers use."""

    @classmethod
    def start(cls, data: Path, environ: dict[str, str]) -> Served:
        replica = Replica(environ, data)
        channel = replica.channel
        return cls(
            replica=replica,
            wallets=wallet_pb2_grpc.WalletServiceStub(channel),
            tables=table_pb2_grpc.TableServiceStub(channel),
            results=results_pb2_grpc.ResultsServiceStub(channel),
        )


def test_recall_right_after_kill_9_lists_every_round_whose_reveal_answered(tmp_path: Path) -> None:
    """``kill -9`` the moment the last Reveal answered (its round durable, perhaps not yet
    projected); the next server catches the views up before it answers the recall."""
    first = Served.start(tmp_path / "data", SQLITE)
    try:
        played = play(first, "t", 3, PLAYERS)
        first.replica.process.send_signal(signal.SIGKILL)
        first.replica.process.wait(timeout=10)
    finally:
        first.replica.stop()
    second = Served.start(tmp_path / "data", SQLITE)
    try:
        assert ids(recall(second, "hero")) == played[::-1]
        assert ids(recall(second, "villain")) == played[::-1]
    finally:
        second.replica.stop()


def _played_in_process(data: Path, rounds: int) -> None:
    """A store where hero and villain played ``rounds`` rounds, written by the application
    itself (quicker than over gRPC), each revealed after its deadline; views of schema 2 beside
    it, as the version before recall left them."""
    clock = ManualClock()
    app = open_app(data, clock=clock, environ=SQLITE)
    try:
        unarranged_rounds(app, clock, PLAYERS, rounds)
        views, _ = app.database.views()
        views.create()
        views.close()
    finally:
        app.close()
    _as_schema_2(data, SQLITE)


def test_kill_9_while_old_views_are_rebuilt_then_the_next_start_recalls_every_round(
    tmp_path: Path,
) -> None:
    """``kill -9`` in the middle of the rebuild of views of an earlier schema (several batches,
    each its own transaction): the next server resumes where the views stopped and answers the
    recall whole, or UNAVAILABLE while it catches up, never a part of it."""
    data, rounds = tmp_path / "data", 1500
    _played_in_process(data, rounds)
    first = Replica(SQLITE, data)
    try:
        wait_until(lambda: any("views_rebuilding" in line for line in first.lines), "a rebuild")
        time.sleep(0.3)  # somewhere in the rebuild: its batches take seconds here
        first.process.send_signal(signal.SIGKILL)
        first.process.wait(timeout=10)
    finally:
        first.stop()
    second = Served.start(data, SQLITE)
    try:
        recalled, token = 0, ""
        deadline = time.monotonic() + 6 * WAIT
        while True:
            assert time.monotonic() < deadline
            try:
                page = recall(second, "hero", 1000, token)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.UNAVAILABLE, error.details()
                continue
            recalled += len(page.rounds)
            token = page.next_page_token
            if not token:
                break
        assert recalled == rounds
    finally:
        second.replica.stop()


# --- views kept by another process, of an earlier schema, rebuilt while serving ---------------


def _views_lock(data: Path, store: dict[str, str]) -> AdvisoryLock:
    """The lock that elects the views' keeper among PostgreSQL replicas, as a server of an
    earlier version holding it would."""
    from psycopg.conninfo import make_conninfo

    app = open_app(data, environ=store)
    try:
        settings = postgres_settings(app.env)
        scope = app.env.get("POSTGRES_SCHEMA") or settings.get("dbname", "")
        return AdvisoryLock(make_conninfo("", **settings), scope)
    finally:
        app.close()


def test_a_replica_never_answers_recall_from_views_an_earlier_version_keeps(tmp_path: Path) -> None:
    """PostgreSQL, a rolling upgrade: a server of the version before recall still keeps the
    views (schema 2: no recall rows), and a server of this version answers. It says the views
    are not of its schema yet instead of an empty list; when it takes the views over it rebuilds
    them while serving, and meanwhile answers UNAVAILABLE or the whole list, never part of it
    nor an internal error."""
    with store_environ("postgres", tmp_path) as store:
        data = tmp_path / "data"
        first = ServerThread(data, store, ManualClock())
        played = play(first, "t", 4, PLAYERS)
        caught_up(first)
        first.stop()
        _as_schema_2(data, store)
        old_keeper = _views_lock(data, store)
        assert old_keeper.acquire()
        server = ServerThread(data, store, ManualClock())
        try:
            refused = assert_refused(
                server.results.ListPlayerRounds,
                results_pb2.ListPlayerRoundsRequest(player_id="hero"),
                grpc.StatusCode.UNAVAILABLE,
                "UNAVAILABLE",
            )
            assert "schema 2" in refused.message and str(SCHEMA_VERSION) in refused.message
            old_keeper.release()  # the old server stops: this one takes the views over
            answers: list[str] = []
            deadline = time.monotonic() + 3 * WAIT
            while True:
                assert time.monotonic() < deadline, answers[-5:]
                try:
                    got = ids(recall(server, "hero"))
                except grpc.RpcError as error:
                    answers.append(error.code().name)
                    assert error.code() == grpc.StatusCode.UNAVAILABLE, error.details()
                    continue
                assert got == played[::-1], got  # never a part of the list
                break
            assert server.running.views.schema_version() == SCHEMA_VERSION
        finally:
            old_keeper.release()
            server.stop()


# --- paging while rounds end ------------------------------------------------------------------


def test_aip_158_rounds_that_end_while_a_client_pages_are_neither_repeated_nor_skipped(
    server: ServerThread,
) -> None:
    """Pages are keyed on the position of the event that ended each round, newest first: a
    round that ends while a client pages goes before the first page, so the pages after it
    continue exactly where the last one stopped, and a new first page shows it."""
    older = play(server, "t", 5, PLAYERS)
    caught_up(server)
    page = recall(server, "hero", 2)
    seen = ids(page)
    newer = play(server, "t", 3)
    while page.next_page_token:
        page = recall(server, "hero", 2, page.next_page_token)
        seen += ids(page)
    assert seen == older[::-1]
    assert ids(recall(server, "hero", 3)) == newer[::-1]


def test_a_later_page_does_not_wait_for_rounds_newer_than_its_token(
    server: ServerThread, store: dict[str, str], tmp_path: Path
) -> None:
    """The views lag (held here) behind a round revealed after the first page: the next pages
    hold only older rounds, all in the views already, so they answer at once."""
    older = play(server, "t", 3, PLAYERS)
    caught_up(server)
    first = recall(server, "hero", 1)
    with views_held(store, tmp_path / "data"):
        play(server, "t", 1)
        rest = recall(server, "hero", 5, first.next_page_token)
    assert ids(first) + ids(rest) == older[::-1]


def test_concurrent_reveals_at_several_tables_each_list_every_player_once(
    server: ServerThread,
) -> None:
    """Rounds revealed at the same moment at several tables (one player per table, R10.6) are
    each in their players' recall once, newest first by when each ended."""
    tables = {f"t{k}": [f"p{k}a", f"p{k}b"] for k in range(4)}
    dealt = {}
    for table, players in tables.items():
        seated_table(server, table, dict.fromkeys(players, 10**6))
        dealt[table] = deal(server, table)
        arrange_well(server, dealt[table])
    with ThreadPoolExecutor(len(tables)) as pool:
        list(pool.map(lambda t: reveal(server, dealt[t].round_id), tables))
    for table, players in tables.items():
        for player in players:
            assert ids(recall(server, player)) == [dealt[table].round_id]


# --- absurd sizes and ids at the limits --------------------------------------------------------


@pytest.mark.parametrize("size", [2**31 - 1, 1001])
def test_a_page_size_above_the_maximum_is_the_maximum(server: ServerThread, size: int) -> None:
    played = play(server, "t", 3, PLAYERS)
    page = recall(server, "hero", size)
    assert (ids(page), page.next_page_token) == (played[::-1], "")


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_a_negative_page_size_is_invalid(server: ServerThread, size: int) -> None:
    credit(server, "hero", 100)
    assert_refused(
        server.results.ListPlayerRounds,
        results_pb2.ListPlayerRoundsRequest(player_id="hero", page_size=size),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        field="page_size",
    )


WIDEST = "\U0001f600" * 128  # 128 characters, each escaped to 12 in a page token's JSON
HAN = "玩" * 128


def every_page(call: Any, request: Any, items: str) -> list[Any]:
    """``request``'s listing one item a page, following each next_page_token to the end."""
    seen: list[Any] = []
    while True:
        page = call(request)
        seen += list(getattr(page, items))
        if not page.next_page_token:
            return seen
        request.page_token = page.next_page_token


def test_ids_of_128_characters_outside_the_bmp_page_with_their_tokens(server: ServerThread) -> None:
    """The widest ids every listing's tokens hold (player and table ids): recall, the ledger,
    the table's results and its rounds."""
    for k, player in enumerate([WIDEST, HAN]):
        credit(server, player, 10**6, f"start-{k}")
    open_table(server, WIDEST)
    for player in (WIDEST, HAN):
        sit(server, WIDEST, player)
    played = play(server, WIDEST, 3)
    for player in (WIDEST, HAN):
        recall = results_pb2.ListPlayerRoundsRequest(player_id=player, page_size=1)
        rounds = every_page(server.results.ListPlayerRounds, recall, "rounds")
        assert [r.round_id for r in rounds] == played[::-1]
        ledger = results_pb2.ListLedgerEntriesRequest(player_id=player, page_size=1)
        entries = every_page(server.results.ListLedgerEntries, ledger, "entries")
        assert [e.round_id for e in entries] == ["", *played]  # the credit, then each round
    table_results = results_pb2.ListRoundResultsRequest(table_id=WIDEST, page_size=1)
    results = every_page(server.results.ListRoundResults, table_results, "rounds")
    assert [r.round_id for r in results] == played
    listed = every_page(
        server.tables.ListRounds,
        table_pb2.ListRoundsRequest(table_id=WIDEST, page_size=1),
        "rounds",
    )
    assert [r.round_id for r in listed] == played
