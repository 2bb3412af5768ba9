"""Every read of the views answers as of the call (``service.rpc.views``): ``ListLedgerEntries``,
``ListRoundResults``, ``GetPlayerStats``, ``GetLeaderboard``, ``GetRoundResult``,
``ListPlayerRounds``, and the results view's copy of a round in ``AuditRound`` and
``ExportRound``. Right after a command each shows what the command did (read-your-writes);
while the views are held behind, being rebuilt (their tables dropped, then refilled part of the
way) or of an earlier or later schema, each is UNAVAILABLE or complete, never partial, never
INTERNAL. Real servers on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from projections.projector import Projector, rebuild
from projections.store import SCHEMA, SCHEMA_VERSION, ViewStore
from service._generated.thirteen.v1 import audit_pb2, results_pb2
from service.rpc import paging
from service.rpc import views as views_module
from tests.e2e.helpers import (
    WAIT,
    arrange_well,
    assert_refused,
    credit,
    deal,
    refusal_of,
    reveal,
)
from tests.e2e.helpers import balance as wallet_balance
from tests.e2e.test_attack_recall import caught_up, play, views_held
from tests.support.server import ServerThread

PLAYERS = ["hero", "villain"]
VIEW_FINDING = "the results view equals the result recomputed from the events"

Read = Callable[[ServerThread, "Game"], Any]


@dataclass
class Game:
    """What the reads ask about: a table and the last round played at it."""

    table: str
    round_id: str


def _ledger(server: ServerThread, player: str) -> Any:
    request = results_pb2.ListLedgerEntriesRequest(player_id=player, page_size=1000)
    return server.results.ListLedgerEntries(request)


def _stats(server: ServerThread, player: str) -> Any:
    return server.results.GetPlayerStats(results_pb2.GetPlayerStatsRequest(player_id=player))


def _recall(server: ServerThread, player: str) -> Any:
    request = results_pb2.ListPlayerRoundsRequest(player_id=player, page_size=1000)
    return server.results.ListPlayerRounds(request)


def _audit(server: ServerThread, game: Game) -> tuple[bool, list[bool]]:
    """Whether the audit passed, and its comparison with the results view (none when the
    audit did not have the view's result)."""
    report = server.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=game.round_id))
    return report.ok, [f.ok for f in report.findings if f.message == VIEW_FINDING]


def _exported_result(server: ServerThread, game: Game) -> Any:
    request = audit_pb2.ExportRoundRequest(round_id=game.round_id)
    return json.loads(server.audit.ExportRound(request).document)["result"]


READS: dict[str, Read] = {
    "ListLedgerEntries": lambda server, game: _ledger(server, "hero"),
    "ListRoundResults": lambda server, game: server.results.ListRoundResults(
        results_pb2.ListRoundResultsRequest(table_id=game.table, page_size=1000)
    ),
    "GetPlayerStats": lambda server, game: _stats(server, "hero"),
    "GetLeaderboard": lambda server, game: server.results.GetLeaderboard(
        results_pb2.GetLeaderboardRequest(limit=100)
    ),
    "GetRoundResult": lambda server, game: server.results.GetRoundResult(
        results_pb2.GetRoundResultRequest(round_id=game.round_id)
    ),
    "ListPlayerRounds": lambda server, game: _recall(server, "hero"),
    "AuditRound": _audit,
    "ExportRound": _exported_result,
}
FINAL_ONCE_WRITTEN = {"GetRoundResult", "AuditRound", "ExportRound"}
"""Reads of one round's row, which is final once written: views that already hold it answer
without waiting for the rest of the log."""


@dataclass(frozen=True)
class Refused:
    code: grpc.StatusCode
    message: str


def answers(server: ServerThread, game: Game) -> dict[str, Any]:
    """Each read's answer, or its refusal when it was refused."""
    found: dict[str, Any] = {}
    for name, read in READS.items():
        try:
            found[name] = read(server, game)
        except grpc.RpcError as error:
            found[name] = Refused(error.code(), error.details() or "")
    return found


def assert_unavailable_or(
    complete: dict[str, Any], got: dict[str, Any], *says: str, must: Collection[str] = ()
) -> None:
    """Each answer is the complete one or UNAVAILABLE saying each of ``says``; those named in
    ``must`` are UNAVAILABLE."""
    for name, answer in got.items():
        if answer == complete[name] and name not in must:
            continue
        assert isinstance(answer, Refused), (name, answer)
        assert answer.code == grpc.StatusCode.UNAVAILABLE, (name, answer)
        for words in says:
            assert words in answer.message, (name, answer.message)


@pytest.fixture
def quick_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The views' catch-up bound shortened, so that a read of views that cannot catch up
    says so sooner (nothing here depends on how long it takes)."""
    monkeypatch.setattr(views_module, "CATCH_UP_SECONDS", 0.5)


def played(server: ServerThread) -> Game:
    rounds = play(server, "t", 2, PLAYERS)
    caught_up(server)
    return Game("t", rounds[-1])


# --- behind: held back while commands are answered --------------------------------------------


def test_views_held_behind_a_command_answer_unavailable_then_what_it_did(
    server: ServerThread, store: dict[str, str], tmp_path: Path, quick_bound: None
) -> None:
    """A credit and a round revealed while the views' writer is held: every read is
    UNAVAILABLE ("retry shortly") until the views hold them, then shows them."""
    play(server, "t", 1, PLAYERS)
    caught_up(server)
    with views_held(store, tmp_path / "data"):
        credit(server, "hero", 7, "while-held")
        game = Game("t", play(server, "t", 1)[0])
        held = answers(server, game)
    caught_up(server)
    complete = answers(server, game)
    assert_unavailable_or(complete, held, "has not caught up", "retry shortly", must=READS)
    assert "while-held" in [e.transfer_id for e in complete["ListLedgerEntries"].entries]
    assert complete["ListRoundResults"].rounds[-1].round_id == game.round_id
    assert complete["ListPlayerRounds"].rounds[0].round_id == game.round_id
    assert complete["AuditRound"] == (True, [True])
    assert complete["ExportRound"] is not None


# --- read-your-writes -------------------------------------------------------------------------


def test_each_read_answers_right_after_a_command_with_what_it_did(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    """Commands answered while the views lag (their writer held, released a moment after the
    reads came in): each read waits and shows the command. A player whose first credit is not
    projected yet is no unknown player. On PostgreSQL the reads are asked of a second server,
    which does not keep the views."""
    keeper = start_server()
    asked = start_server() if store["THIRTEEN_STORE"] == "postgres" else keeper
    first = played(keeper)
    with ThreadPoolExecutor(len(READS) + 3) as pool:
        with views_held(store, tmp_path / "data"):
            balance = credit(asked, "hero", 7, "just-now")
            newbie = credit(asked, "newbie", 5, "newbie-first")
            game = Game("t", play(asked, "t", 1)[0])
            calls: dict[str, Future[Any]] = {
                name: pool.submit(read, asked, game) for name, read in READS.items()
            }
            calls["newbie ledger"] = pool.submit(_ledger, asked, "newbie")
            calls["newbie stats"] = pool.submit(_stats, asked, "newbie")
            calls["newbie recall"] = pool.submit(_recall, asked, "newbie")
            time.sleep(0.3)  # the calls are in; the views are still behind them
        got = {name: call.result(timeout=WAIT) for name, call in calls.items()}
    hero_now = wallet_balance(asked, "hero")
    ledger = got["ListLedgerEntries"].entries
    assert [(e.amount, e.balance_after) for e in ledger if e.transfer_id == "just-now"] == [
        (7, balance)
    ]
    assert ledger[-1].balance_after == hero_now  # the round's settlement, last
    assert [r.round_id for r in got["ListRoundResults"].rounds][-2:] == [
        first.round_id,
        game.round_id,
    ]
    stats = got["GetPlayerStats"]
    assert (stats.rounds_played, stats.balance) == (3, hero_now)
    board = {e.player_id: e.net_coins for e in got["GetLeaderboard"].entries}
    assert board["hero"] == stats.net_coins and set(board) == set(PLAYERS)
    assert got["GetRoundResult"].players  # the round revealed just before
    assert got["ListPlayerRounds"].rounds[0].round_id == game.round_id
    assert len(got["ListPlayerRounds"].rounds) == 3
    assert got["AuditRound"] == (True, [True])  # compared with the view, not without it
    assert got["ExportRound"] is not None
    assert [(e.amount, e.balance_after) for e in got["newbie ledger"].entries] == [(5, newbie)]
    assert got["newbie stats"].balance == newbie
    assert list(got["newbie recall"].rounds) == []


# --- rebuilt: dropped, then refilled part of the way ------------------------------------------


class _Upto:
    """The event log as far as ``last``: what a rebuild has replayed so far."""

    def __init__(self, server: ServerThread, last: int) -> None:
        self.app = server.app
        self.last = last

    def events_after(
        self, position: int, limit: int = 500, topics: Collection[str] | None = None
    ) -> list[tuple[int, Any]]:
        found = self.app.events_after(position, limit, topics)
        return [(p, e) for p, e in found if p <= self.last]

    def max_position(self) -> int:
        return self.last

    def load(self, aggregate_id: Any, version: int) -> Any:
        return self.app.load(aggregate_id, version)


def test_a_rebuild_in_progress_answers_unavailable_then_the_whole_answer(
    server: ServerThread, quick_bound: None
) -> None:
    """The views dropped (a rebuild's first step) with nobody to refill them: every read is
    UNAVAILABLE "being rebuilt". Refilled to half the log: UNAVAILABLE or complete. Refilled
    to the end: complete, as before."""
    game = played(server)
    complete = answers(server, game)
    views: ViewStore = server.running.views
    server.running.projector.stop()  # nobody keeps the views but this test now
    views.drop()
    assert_unavailable_or(complete, answers(server, game), "being rebuilt", must=READS)
    last = server.app.max_position()
    rebuild(_Upto(server, last // 2), views)
    halfway = answers(server, game)
    assert_unavailable_or(complete, halfway, "retry shortly")
    waiting = set(READS) - FINAL_ONCE_WRITTEN
    assert all(halfway[name] != complete[name] for name in waiting)
    Projector(server.app, views).run_once()
    assert answers(server, game) == complete


# --- views of another version -----------------------------------------------------------------


@pytest.mark.parametrize("schema", [2, SCHEMA_VERSION + 1])
def test_views_of_another_schema_answer_unavailable_naming_both(
    server: ServerThread, schema: int
) -> None:
    """Views marked as another version's (an earlier server keeping them during a rolling
    upgrade, or a later one): every read is UNAVAILABLE naming both schemas, even of a round
    whose row is there; marked as this version's again, the answers are back."""
    game = played(server)
    complete = answers(server, game)
    views: ViewStore = server.running.views

    def mark(version: int) -> None:
        with views.transaction() as cursor:
            cursor.execute(
                views._sql("UPDATE {p}tracking SET position = ? WHERE name = ?"), (version, SCHEMA)
            )

    mark(schema)
    try:
        assert_unavailable_or(
            complete,
            answers(server, game),
            f"schema {schema}",
            f"schema {SCHEMA_VERSION}",
            must=READS,
        )
    finally:
        mark(SCHEMA_VERSION)
    assert answers(server, game) == complete


# --- NOT_FOUND without loading the wallet -----------------------------------------------------


def test_a_player_without_a_wallet_is_not_found_and_one_with_is_listed(
    server: ServerThread,
) -> None:
    """An unknown player is NOT_FOUND as before (the views' accounts decide, not a replay of
    the wallet); a page token made up for a player whose wallet came after the position it
    names still lists the player."""
    credit(server, "hero", 10, "first")
    reads: list[tuple[Callable[[Any], Any], Callable[..., Any]]] = [
        (server.results.ListLedgerEntries, results_pb2.ListLedgerEntriesRequest),
        (server.results.GetPlayerStats, results_pb2.GetPlayerStatsRequest),
        (server.results.ListPlayerRounds, results_pb2.ListPlayerRoundsRequest),
    ]
    for call, request in reads:
        assert_refused(
            call,
            request(player_id="nobody"),
            grpc.StatusCode.NOT_FOUND,
            "NOT_FOUND",
            says="player 'nobody' has no wallet: credit coins first",
        )
        assert refusal_of(call, request(player_id="")).code == grpc.StatusCode.INVALID_ARGUMENT
    early = paging.token("recall:hero", 1)  # before hero's first credit was stored
    listed = server.results.ListPlayerRounds(
        results_pb2.ListPlayerRoundsRequest(player_id="hero", page_token=early)
    )
    assert list(listed.rounds) == []
    assert _ledger(server, "hero").entries[0].amount == 10


def test_a_round_not_over_is_refused_as_before_and_found_once_revealed(
    server: ServerThread,
) -> None:
    """GetRoundResult of a round still dealt is FAILED_PRECONDITION, of an unknown round
    NOT_FOUND, whatever the views hold; once revealed it is the result Reveal returned."""
    play(server, "t", 1, PLAYERS)
    dealt = deal(server, "t")
    assert_refused(
        server.results.GetRoundResult,
        results_pb2.GetRoundResultRequest(round_id=dealt.round_id),
        grpc.StatusCode.FAILED_PRECONDITION,
        "WRONG_PHASE",
        says="not revealed yet",
    )
    assert_refused(
        server.results.GetRoundResult,
        results_pb2.GetRoundResultRequest(round_id="no-such-round"),
        grpc.StatusCode.NOT_FOUND,
        "NOT_FOUND",
    )
    arrange_well(server, dealt)
    revealed = reveal(server, dealt.round_id)
    got = server.results.GetRoundResult(results_pb2.GetRoundResultRequest(round_id=dealt.round_id))
    assert list(got.players) == list(revealed.players)
