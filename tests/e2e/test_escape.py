"""Leaving a table: free between rounds (R10.5), an escape between the deal and the showdown
(R11): the penalty, its shares, and what happens to the round."""

from __future__ import annotations

import grpc

from domain.fairness.shuffle import commitment
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.e2e.helpers import (
    PHASE,
    arrange,
    arrange_well,
    assert_refused,
    balances,
    deal,
    get_round,
    get_table,
    good_piles,
    hands_of,
    nothing_stored,
    open_table,
    reveal,
    seated_table,
    sit,
    stand,
)
from tests.support.server import ServerThread


def test_r11_an_escapee_pays_25_times_the_base_shared_from_the_next_seat_and_play_goes_on(
    server: ServerThread,
) -> None:
    """RULES.md worked example 8 — R11.1: B pays min(25 × base, balance) when leaving; R11.2:
    C, D and A get 8 each and the coin left over goes to C, the seat after B; R11.3: the round
    goes on without B, who is free to withdraw and to sit elsewhere (R10.6)."""
    coins = {"A": 100, "B": 1000, "C": 200, "D": 300}
    seated_table(server, "t", coins)
    dealt = deal(server, "t")
    assert dealt.base_stake == 1

    left = stand(server, "t", "B")
    assert left.escaped
    assert dict(left.penalty_transfers) == {"B": -25, "C": 9, "D": 8, "A": 8}
    assert [s.player_id for s in left.seats] == ["A", "C", "D"]
    assert balances(server, list(coins)) == {"A": 108, "B": 975, "C": 209, "D": 308}

    round_ = get_round(server, dealt.round_id)
    assert round_.phase == PHASE.ROUND_PHASE_DEALT
    assert [p.escaped for p in round_.players] == [False, True, False, False]
    b = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id="B"))
    assert (b.table_id, b.round_id) == ("", "")
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["B"]):
        assert_refused(  # R11.3: the escapee takes no further part
            server.tables.Arrange,
            table_pb2.ArrangeRequest(round_id=dealt.round_id, player_id="B", special="any"),
            grpc.StatusCode.FAILED_PRECONDITION,
            "WRONG_PHASE",
            field="player_id",
        )
    server.wallets.Debit(wallet_pb2.DebitRequest(player_id="B", amount=75, transfer_id="out"))
    open_table(server, "elsewhere")
    sit(server, "elsewhere", "B")

    replies = [arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p])) for p in "ACD"]
    assert replies[-1].ready_to_reveal  # B is no longer awaited
    result = reveal(server, dealt.round_id)
    assert [p.player_id for p in result.players] == ["A", "C", "D"]
    assert len(result.pairs) == 3
    assert sum(p.coins for p in result.players) == 0
    settled = {p.player_id: p.coins for p in result.players}
    after_escape = {"A": 108, "C": 209, "D": 308}
    assert balances(server, "ACD") == {p: after_escape[p] + settled[p] for p in "ACD"}
    assert sum(balances(server, "ABCD").values()) == sum(coins.values()) - 75


def test_r11_1_the_escape_penalty_is_capped_at_the_balance_at_the_deal(
    server: ServerThread,
) -> None:
    """R11.1: min(multiple × base, balance at the deal); the escapee never goes below zero."""
    parameters = table_pb2.RulesetParameters(escape_penalty_multiple=1000)
    seated_table(server, "t", {"A": 60, "B": 500, "C": 500}, parameters=parameters)
    dealt = deal(server, "t")
    assert dealt.base_stake == 1
    left = stand(server, "t", "A")
    assert dict(left.penalty_transfers) == {"A": -60, "B": 30, "C": 30}
    assert balances(server, "ABC") == {"A": 0, "B": 530, "C": 530}


def test_r11_3_when_one_of_two_players_escapes_the_round_is_abandoned_without_showdown(
    server: ServerThread,
) -> None:
    """R11.3: fewer than two players remain, so the round ends without a showdown; R12: its
    seed is published and a new commitment is made; R10.4: the ended round takes no command;
    the one who stayed is free again and the table can deal once someone else sits down."""
    seated_table(server, "t", {"A": 500, "B": 500})
    before = get_table(server, "t")
    dealt = deal(server, "t")
    assert dealt.base_stake == 10

    left = stand(server, "t", "A")
    assert left.escaped
    assert dict(left.penalty_transfers) == {"A": -250, "B": 250}
    assert (left.current_round_id, [s.player_id for s in left.seats]) == ("", ["B"])
    assert left.next_commitment != before.next_commitment
    assert balances(server, "AB") == {"A": 250, "B": 750}

    ended = get_round(server, dealt.round_id, viewer="B")
    assert ended.phase == PHASE.ROUND_PHASE_ABANDONED
    assert commitment(bytes.fromhex(ended.server_seed)) == dealt.commitment
    assert not ended.HasField("result")
    assert len(ended.hands) == 2  # the round is over: nothing is hidden any more
    b = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id="B"))
    assert (b.table_id, b.round_id) == ("t", "")

    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        assert_refused(
            server.tables.Reveal,
            table_pb2.RevealRequest(round_id=dealt.round_id),
            grpc.StatusCode.FAILED_PRECONDITION,
            "WRONG_PHASE",
            says="R11.3",
        )
        assert_refused(
            server.tables.Arrange,
            table_pb2.ArrangeRequest(round_id=dealt.round_id, player_id="B", special="any"),
            grpc.StatusCode.FAILED_PRECONDITION,
            "WRONG_PHASE",
        )
    server.wallets.Debit(wallet_pb2.DebitRequest(player_id="B", amount=1, transfer_id="out"))

    sit(server, "t", "A")
    again = deal(server, "t")
    assert again.commitment == left.next_commitment
    assert again.number == 2


def test_r10_5_standing_up_between_rounds_costs_nothing(server: ServerThread) -> None:
    """R10.5: leaving between rounds is no escape; the player may sit elsewhere."""
    seated_table(server, "t", {"A": 1000, "B": 1000, "C": 1000})
    dealt = deal(server, "t")
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    before = balances(server, "ABC")

    left = stand(server, "t", "C")
    assert not left.escaped
    assert dict(left.penalty_transfers) == {}
    assert balances(server, "ABC") == before
    open_table(server, "u")
    sit(server, "u", "C")
    again = deal(server, "t")
    assert [p.player_id for p in again.players] == ["A", "B"]
