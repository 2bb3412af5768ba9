"""Coins over several rounds (R7.2, R9): every round and every penalty sums to zero, a loser
pays at most the balance recorded at the deal, and no balance ever goes below zero."""

from __future__ import annotations

import grpc

from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    PHASE,
    arrange,
    assert_refused,
    balances,
    deal,
    expected_coins,
    foul_piles,
    good_piles,
    hands_of,
    nothing_stored,
    reveal,
    seated_table,
    stand,
    wait_for_phase,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread


def test_r7_2_coins_are_conserved_and_no_balance_goes_negative_over_several_rounds(
    server: ServerThread, clock: ManualClock
) -> None:
    """Four rounds with good hands, fouls, a missed deadline and an escape: the total of all
    balances never changes, none is negative, and each round settles by R9 (R9.3: as recorded)."""
    coins = {"A": 200, "B": 5000, "C": 300, "D": 2000}
    players = list(coins)
    total = sum(coins.values())
    seated_table(server, "t", coins)
    plans = [
        {"A": "good", "B": "good", "C": "good", "D": "good"},
        {"A": "foul", "B": "good", "C": "none", "D": "good"},
        {"A": "good", "B": "foul", "C": "good", "D": "escape"},
        {"A": "none", "B": "none", "C": "good"},
    ]
    for plan in plans:
        before = balances(server, players)
        dealt = deal(server, "t")
        hands = hands_of(dealt)
        penalty = {}
        for player, how in plan.items():
            if how == "good":
                arrange(server, dealt.round_id, player, good_piles(hands[player]))
            elif how == "foul":
                arrange(server, dealt.round_id, player, foul_piles(hands[player]))
            elif how == "escape":
                penalty = dict(stand(server, "t", player).penalty_transfers)
                assert sum(penalty.values()) == 0
        result: table_pb2.RevealResponse | table_pb2.RoundResult  # both list the players
        if all(how in ("good", "escape") for how in plan.values()):
            result = reveal(server, dealt.round_id)
        else:
            clock.advance(60)
            result = wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED).result
        round_ = server.tables.GetRound(table_pb2.GetRoundRequest(round_id=dealt.round_id))
        settled = {p.player_id: p.coins for p in result.players}
        assert settled == expected_coins(result, round_.players)
        assert sum(settled.values()) == 0
        for p in result.players:
            assert -p.coins <= before[p.player_id]  # R9.1: at most the balance at the deal
        after = balances(server, players)
        for player in players:
            assert after[player] == before[player] + settled.get(player, 0) + penalty.get(player, 0)
            assert after[player] >= 0
        assert sum(after.values()) == total


def test_r9_1_a_loser_pays_at_most_the_balance_at_the_deal_and_the_winners_share_it(
    server: ServerThread, clock: ManualClock
) -> None:
    """R9.1: with a fixed base of 10, A (50 coins) owes 120 but pays 50 and ends at 0; R9.2:
    the winners share what was paid; R8.4: A can no longer be dealt in, and the refusal says
    so."""
    parameters = table_pb2.RulesetParameters(stake_policy="fixed", base_stake=10, seat_minimum=5)
    seated_table(server, "t", {"A": 50, "B": 1000, "C": 1000}, parameters=parameters)
    dealt = deal(server, "t")
    assert dealt.base_stake == 10
    for p in "BC":
        arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p]))
    clock.advance(60)
    result = wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED).result

    by_player = {p.player_id: p for p in result.players}
    assert (by_player["A"].foul, by_player["A"].points) == (True, -12)
    assert by_player["A"].coins == -50
    assert by_player["B"].coins + by_player["C"].coins == 50
    assert {p: c.coins for p, c in by_player.items()} == expected_coins(result, dealt.players)
    assert balances(server, "ABC") == {
        "A": 0,
        "B": 1000 + by_player["B"].coins,
        "C": 1000 + by_player["C"].coins,
    }
    with nothing_stored(server, tables=["t"], players=["A", "B", "C"]):
        assert_refused(
            server.tables.Deal,
            table_pb2.DealRequest(table_id="t"),
            grpc.StatusCode.FAILED_PRECONDITION,
            "INSUFFICIENT_STAKE",
            says="A (0)",
        )
