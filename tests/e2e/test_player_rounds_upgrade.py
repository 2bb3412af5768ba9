"""Game recall on stores whose views were built before it existed (STYLE 14): the views of the
first release (the v1 fixture store) and of view schema 2 are rebuilt from the log when a server
of this version starts, and ``ListPlayerRounds`` then answers for every round played before."""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2

from projections.store import SCHEMA, SCHEMA_VERSION
from service._generated.thirteen.v1 import results_pb2, table_pb2, wallet_pb2
from service.opening import open_app
from tests.e2e.helpers import refusal_of, wait_until
from tests.e2e.test_player_rounds import (
    as_row,
    caught_up,
    every_page,
    expected_rows,
    play_five_rounds,
)
from tests.support.clock import ManualClock
from tests.support.health import health_stub
from tests.support.server import ServerThread

FIXTURE = Path(__file__).parent.parent / "fixtures" / "v1_store"
PLAYERS = ("ann", "bob", "cat", "dan", "eve")


def _every(call: Any, request: Any, items: str) -> list[Any]:
    found, token = [], ""
    while True:
        request.page_token = token
        page = call(request)
        found += getattr(page, items)
        token = page.next_page_token
        if not token:
            return found


def recall_from_other_answers(
    server: ServerThread, tables: tuple[str, ...]
) -> dict[str, list[Any]]:
    """Each player's recall as ListRounds, GetRound, ListRoundResults and ListLedgerEntries
    tell it, newest first. In the fixture no one who missed the showdown had submitted
    anything, so their piles are empty."""
    ledgers = {
        p: _every(
            server.results.ListLedgerEntries,
            results_pb2.ListLedgerEntriesRequest(player_id=p, page_size=3),
            "entries",
        )
        for p in PLAYERS
    }
    recall: dict[str, list[tuple[Any, dict[str, Any]]]] = defaultdict(list)
    for table_id in tables:
        ended = {
            r.round_id: r
            for r in _every(
                server.results.ListRoundResults,
                results_pb2.ListRoundResultsRequest(table_id=table_id, page_size=2),
                "rounds",
            )
        }
        for listed in _every(
            server.tables.ListRounds, table_pb2.ListRoundsRequest(table_id=table_id), "rounds"
        ):
            if listed.round_id not in ended:
                continue
            end = ended[listed.round_id]
            shown = {p.player_id: p for p in end.result.players}
            for player in listed.players:
                p = player.player_id
                round_ = server.tables.GetRound(
                    table_pb2.GetRoundRequest(round_id=listed.round_id, viewer=p)
                )
                moved = [e for e in ledgers[p] if e.round_id == listed.round_id]
                row = {
                    "round_id": listed.round_id,
                    "table_id": table_id,
                    "number": listed.number,
                    "seat": player.seat,
                    "dealt_at": listed.dealt_at,
                    "ended_at": end.ended_at,
                    "outcome": end.outcome,
                    "base_stake": listed.base_stake,
                    "cards": next(list(h.cards) for h in round_.hands if h.player_id == p),
                    "escaped": player.escaped,
                    "balance_before": moved[0].balance_after - moved[0].amount,
                    "balance_after": moved[-1].balance_after,
                    "coins": sum(e.amount for e in moved),
                    "front": [],
                    "middle": [],
                    "back": [],
                    "special": "",
                    "foul": False,
                    "foul_reason": "",
                    "points": 0,
                }
                if p in shown:
                    s = shown[p]
                    row |= {
                        "front": list(s.front),
                        "middle": list(s.middle),
                        "back": list(s.back),
                        "special": s.special,
                        "foul": s.foul,
                        "foul_reason": s.foul_reason,
                        "points": s.points,
                    }
                recall[p].append((end.ended_at.ToDatetime(), row))
    return {
        p: [row for _, row in sorted(rows, key=lambda r: r[0], reverse=True)]
        for p, rows in recall.items()
    }


def test_the_first_versions_store_is_recalled_after_its_views_are_rebuilt(tmp_path: Path) -> None:
    """The v1 fixture: revealed rounds with a foul, an escape (dan) and a round abandoned for
    want of players (R11.3), plus two rounds still open, which are not listed."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    clock = ManualClock(datetime(2026, 11, 1, 12, 0, tzinfo=UTC))  # no deadline has passed
    server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, clock)
    try:
        caught_up(server)
        assert server.running.views.schema_version() == SCHEMA_VERSION
        expected = recall_from_other_answers(server, ("t-standard", "t-fujian"))
        open_rounds = {
            server.tables.GetTable(table_pb2.GetTableRequest(table_id=t)).current_round_id
            for t in ("t-standard", "t-fujian")
        }
        assert len(open_rounds) == 2 and "" not in open_rounds
        for player in PLAYERS:
            got = [as_row(r) for page in every_page(server, player, 2) for r in page]
            assert got == expected.get(player, []), player
            assert not open_rounds & {r["round_id"] for r in got}
        dan = {r["outcome"]: r for r in expected["dan"] if r["escaped"]}
        assert set(dan) == {"revealed", "abandoned"}  # the fixture's two escapes
        assert all(r["coins"] < 0 and r["points"] == 0 for r in dan.values())
        assert any(r["foul"] for r in expected["bob"])
    finally:
        server.stop()


def _as_schema_2(data: Path, store: dict[str, str]) -> None:
    """Turn the views back into what version 2 left: no recall table, no index of the
    journal by round, the schema mark 2."""
    app = open_app(data, environ=store)
    views, _ = app.database.views()
    try:
        with views.transaction() as cursor:
            cursor.execute(views._sql("DROP TABLE {p}player_rounds"))
            cursor.execute(views._sql("DROP INDEX {p}journal_by_round"))
            cursor.execute(
                views._sql("UPDATE {p}tracking SET position = 2 WHERE name = ?"), (SCHEMA,)
            )
        assert views.schema_version() == 2
    finally:
        views.close()
        app.close()


def test_views_of_schema_2_are_rebuilt_with_the_recall_on_start(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    first = start_server()
    played = play_five_rounds(first, first.clock)
    caught_up(first)
    first.stop()
    _as_schema_2(tmp_path / "data", store)

    second = start_server()
    caught_up(second)
    assert second.running.views.schema_version() == SCHEMA_VERSION
    for player in "ABCD":
        got = [as_row(r) for page in every_page(second, player, 3) for r in page]
        assert got == expected_rows(played, player), player


def test_views_of_a_newer_schema_are_left_alone_and_recall_is_unavailable(
    start_server: Callable[[], ServerThread], store: dict[str, str], tmp_path: Path
) -> None:
    """A rolling upgrade (PostgreSQL) or a downgrade: a server of this version that finds views
    a later version built neither rebuilds them back to its own schema nor writes to them. It
    serves the game, gives up the views' lead, says so on health and in its projector's
    failure, and answers the recall UNAVAILABLE rather than from views it does not know."""
    first = start_server()
    play_five_rounds(first, first.clock)
    caught_up(first)
    first.stop()
    app = open_app(tmp_path / "data", environ=store)
    views, _ = app.database.views()
    try:
        with views.transaction() as cursor:
            cursor.execute(
                views._sql("UPDATE {p}tracking SET position = ? WHERE name = ?"),
                (SCHEMA_VERSION + 1, SCHEMA),
            )
        before = views.resume_point()
    finally:
        views.close()
        app.close()
    assert before is None  # not this version's views

    second = start_server()
    failure = wait_until(lambda: second.running.projector.failure, "the projector's failure")
    assert "newer than this server's" in failure
    second.wallets.Credit(
        wallet_pb2.CreditRequest(player_id="A", amount=5, transfer_id="while-newer")
    )  # the game goes on
    check = health_stub(second.channel).Check
    results = health_pb2.HealthCheckRequest(service="thirteen.v1.ResultsService")
    assert check(results).status == health_pb2.HealthCheckResponse.NOT_SERVING
    refused = refusal_of(
        second.results.ListPlayerRounds, results_pb2.ListPlayerRoundsRequest(player_id="A")
    )
    assert refused.code == grpc.StatusCode.UNAVAILABLE
    assert second.running.views.schema_version() == SCHEMA_VERSION + 1  # not rebuilt back
    assert not second.running.projector.leading
