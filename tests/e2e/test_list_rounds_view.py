"""ListRounds from the table listing (issue 22, a cost bound per call): a page is read from a view
of each table's rounds as an observer sees them (projections/listing.py), keyed by the round's
number, as of the call. Paged by token while rounds are played, every round is listed once, in
order; each listed round is what GetRound shows an observer, in every phase; hostile tokens and
sizes are INVALID_ARGUMENT naming the field; while the views lag the call waits for them and
then says UNAVAILABLE, never a list without the round just dealt. Real servers, both stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from service._generated.thirteen.v1 import results_pb2, table_pb2
from service.rpc import paging
from service.rpc import views as views_module
from tests.e2e.helpers import (
    arrange_well,
    assert_refused,
    deal,
    get_round,
    refusal_of,
    reveal,
    seated_table,
    showdowns,
)
from tests.e2e.test_attack_recall import caught_up, views_held
from tests.support.server import ServerThread

PLAYERS = {"A": 10**9, "B": 10**9, "C": 10**9}
Page = Callable[[ServerThread, str], tuple[list[str], str]]


def rounds_page(server: ServerThread, token: str) -> tuple[list[str], str]:
    request = table_pb2.ListRoundsRequest(table_id="t", page_size=4, page_token=token)
    answer = server.tables.ListRounds(request)
    return [r.round_id for r in answer.rounds], answer.next_page_token


def results_page(server: ServerThread, token: str) -> tuple[list[str], str]:
    request = results_pb2.ListRoundResultsRequest(table_id="t", page_size=4, page_token=token)
    answer = server.results.ListRoundResults(request)
    return [r.round_id for r in answer.rounds], answer.next_page_token


def recall_page(server: ServerThread, token: str) -> tuple[list[str], str]:
    request = results_pb2.ListPlayerRoundsRequest(player_id="A", page_size=4, page_token=token)
    answer = server.results.ListPlayerRounds(request)
    return [r.round_id for r in answer.rounds], answer.next_page_token


@pytest.mark.parametrize(
    ("page", "newest_first"),
    [(rounds_page, False), (results_page, False), (recall_page, True)],
    ids=["ListRounds", "ListRoundResults", "ListPlayerRounds"],
)
def test_paging_by_token_lists_each_round_once_while_rounds_are_played(
    server: ServerThread, page: Page, newest_first: bool
) -> None:
    """AIP-158 with keyset tokens: rounds revealed between pages are listed after the older
    ones (oldest first) or before the first page (newest first); none twice, none skipped."""
    seated_table(server, "t", PLAYERS)
    before = showdowns(server, "t", 10)
    listed, token = page(server, "")
    during: list[str] = []
    while token:
        during += showdowns(server, "t", 2)
        found, token = page(server, token)
        listed += found
    assert len(listed) == len(set(listed))
    if newest_first:
        assert listed == before[::-1]
        assert page(server, "")[0] == (during[::-1] + before[::-1])[:4]
    else:
        assert listed == before + during


def test_each_listed_round_is_what_an_observer_sees_in_every_phase(server: ServerThread) -> None:
    """R10.4, R11, R12.6: the listing shows a round as GetRound shows an observer, whether
    dealt with some hands submitted, with a player escaped, abandoned or revealed."""
    seated_table(server, "t", PLAYERS)
    revealed = deal(server, "t")
    arrange_well(server, revealed)
    reveal(server, revealed.round_id)
    abandoned = deal(server, "t")
    for player in ("A", "B"):  # two escape: one player is left, the round is abandoned
        server.tables.StandUp(table_pb2.StandUpRequest(table_id="t", player_id=player))
    for player in ("A", "B"):
        server.tables.SitDown(table_pb2.SitDownRequest(table_id="t", player_id=player))
    escaped = deal(server, "t")
    arrange_well(server, escaped, ["A"])
    server.tables.StandUp(table_pb2.StandUpRequest(table_id="t", player_id="C"))
    listed = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")).rounds
    ids = [revealed.round_id, abandoned.round_id, escaped.round_id]
    assert [r.round_id for r in listed] == ids
    for round_ in listed:  # GetRoundResponse has Round's fields, numbered alike
        shown = get_round(server, round_.round_id, "").SerializeToString()
        assert round_ == table_pb2.Round.FromString(shown)
    phases = [r.phase for r in listed]
    assert phases == [
        table_pb2.ROUND_PHASE_REVEALED,
        table_pb2.ROUND_PHASE_ABANDONED,
        table_pb2.ROUND_PHASE_DEALT,
    ]
    assert not listed[2].hands and not listed[2].server_seed  # in progress: nothing hidden
    assert {p.player_id: (p.submitted, p.escaped) for p in listed[2].players} == {
        "A": (True, False),
        "B": (False, False),
        "C": (False, True),
    }


@pytest.mark.parametrize(
    ("token", "size"),
    [
        ("not a token", 0),
        (paging.token("t:other", 3), 0),  # another table's
        (paging.token("results:t", 3), 0),  # another listing's, of the same table
        (paging.token("t:t", -1), 0),
        (paging.token("t:t", 2**70), 0),
        ("", -1),
        ("", -(2**31)),
    ],
    ids=["garbage", "other-table", "other-listing", "negative", "absurd", "size-1", "size-2^31"],
)
def test_hostile_page_tokens_and_sizes_are_invalid_argument_naming_the_field(
    server: ServerThread, token: str, size: int
) -> None:
    seated_table(server, "t", PLAYERS)
    seated_table(server, "other", {"D": 1000, "E": 1000})
    showdowns(server, "t", 2)
    assert_refused(
        server.tables.ListRounds,
        table_pb2.ListRoundsRequest(table_id="t", page_size=size, page_token=token),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        field="page_token" if token else "page_size",
    )


def test_a_token_past_the_last_round_or_a_size_of_2_to_the_31_minus_1_is_served(
    server: ServerThread,
) -> None:
    """AIP-158: a size above the cap is served as the cap; a token past the end lists none."""
    seated_table(server, "t", PLAYERS)
    ids = showdowns(server, "t", 3)
    huge = table_pb2.ListRoundsRequest(table_id="t", page_size=2**31 - 1)
    assert [r.round_id for r in server.tables.ListRounds(huge).rounds] == ids
    past = table_pb2.ListRoundsRequest(table_id="t", page_token=paging.token("t:t", 10**9))
    assert server.tables.ListRounds(past) == table_pb2.ListRoundsResponse()


def test_while_the_views_lag_list_rounds_waits_then_is_unavailable_never_without_the_new_round(
    server: ServerThread,
    store: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As every read of the views (docs/concepts/read-models.md): a round dealt while the
    views' writer is held is not yet in them, so ListRounds waits for them (here 0.5 s), then
    answers UNAVAILABLE "retry shortly"; once they catch up it lists the round (read your
    writes)."""
    monkeypatch.setattr(views_module, "CATCH_UP_SECONDS", 0.5)
    seated_table(server, "t", PLAYERS)
    first = showdowns(server, "t", 1)
    caught_up(server)
    request = table_pb2.ListRoundsRequest(table_id="t")
    with views_held(store, tmp_path / "data"):
        dealt = deal(server, "t")
        refused = refusal_of(server.tables.ListRounds, request)
    assert refused.code == grpc.StatusCode.UNAVAILABLE, refused
    assert "has not caught up" in refused.message and "retry shortly" in refused.message
    caught_up(server)
    listed = server.tables.ListRounds(request).rounds
    assert [r.round_id for r in listed] == [*first, dealt.round_id]
