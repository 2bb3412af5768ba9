"""Whole rounds through the real server: deal, arrange, reveal and settle (R4, R6, R7, R8.3, R9,
R10), on two-, three- and four-player tables, including fouls and the deadline sweeper."""

from __future__ import annotations

import grpc
import pytest

from domain.rules.arrangement import Arrangement
from domain.rules.cards import parse_cards
from domain.rules.play import Play
from domain.rules.ruleset import FUJIAN, STANDARD, Ruleset
from domain.rules.scoring import Seat, score_round
from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    PHASE,
    Piles,
    arrange,
    arrange_well,
    assert_refused,
    balances,
    deal,
    expected_coins,
    foul_piles,
    get_round,
    get_table,
    good_piles,
    hands_of,
    nothing_stored,
    reveal,
    seated_table,
    wait_for_phase,
)
from tests.support.clock import ManualClock
from tests.support.server import ServerThread


def _score(submitted: dict[str, Piles], ruleset: Ruleset = STANDARD) -> dict[str, int]:
    """R6 from the domain for these arrangements, in seat order: the server must agree."""
    seats = [
        Seat(p, Play(Arrangement(*(parse_cards(pile) for pile in piles))))
        for p, piles in submitted.items()
    ]
    return {s.player_id: s.points for s in score_round(seats, ruleset).players}


@pytest.mark.parametrize("players", [2, 3, 4])
def test_r10_a_round_is_dealt_arranged_revealed_and_settled_on_a_table_of_n(
    server: ServerThread, players: int
) -> None:
    """R10.1, R12.5: everyone seated gets 13 distinct cards; R10.3: once all have arranged the
    round can be revealed; R6.8, R7.2: points and coins sum to zero; R9: balances move by the
    settlement."""
    coins = dict(zip("ABCD"[:players], [1000, 700, 2000, 480], strict=False))
    seated_table(server, "t", coins)
    dealt = deal(server, "t", client_seed="seen the commitment")
    hands = hands_of(dealt)
    assert list(hands) == list(coins)
    assert all(len(h) == 13 for h in hands.values())
    assert len({c for h in hands.values() for c in h}) == 13 * players
    assert dealt.phase == PHASE.ROUND_PHASE_DEALT
    assert [(p.player_id, p.seat, p.balance_at_deal) for p in dealt.players] == [
        (p, i, c) for i, (p, c) in enumerate(coins.items())
    ]
    assert dealt.base_stake == 10  # R8.3: the lowest balance, 480 to 1000, is in the ×10 bracket
    assert get_table(server, "t").current_round_id == dealt.round_id

    submitted = arrange_well(server, dealt)
    assert get_round(server, dealt.round_id).players[-1].submitted

    result = reveal(server, dealt.round_id)
    assert result.server_seed
    assert len(result.pairs) == players * (players - 1) // 2
    points = {p.player_id: p.points for p in result.players}
    assert points == _score(submitted)
    assert sum(points.values()) == 0
    assert sum(p.coins for p in result.players) == 0
    settled = {p.player_id: p.coins for p in result.players}
    assert settled == expected_coins(result, dealt.players)
    assert balances(server, list(coins)) == {p: coins[p] + settled[p] for p in coins}
    for player in result.players:
        assert not player.foul
        assert (list(player.front), list(player.middle), list(player.back)) == tuple(
            submitted[player.player_id]
        )
        assert list(player.cards) == hands[player.player_id]

    after = get_round(server, dealt.round_id)
    assert after.phase == PHASE.ROUND_PHASE_REVEALED
    assert after.result.players == result.players
    table = get_table(server, "t")
    assert (table.current_round_id, table.round_count) == ("", 1)


def test_r4_3_a_foul_draft_is_accepted_and_can_be_corrected_before_the_reveal(
    server: ServerThread,
) -> None:
    """R4.3: a foul arrangement is accepted as a draft and reported as a foul; R10.3: it keeps
    the round from being revealed before the deadline; the corrected arrangement counts."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    hands = hands_of(dealt)
    arrange_well(server, dealt, ["B"])

    draft = arrange(server, dealt.round_id, "A", foul_piles(hands["A"]))
    assert draft.foul and draft.foul_reason
    assert not draft.ready_to_reveal
    assert get_round(server, dealt.round_id).players[0].submitted
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=["A", "B"]):
        assert_refused(
            server.tables.Reveal,
            table_pb2.RevealRequest(round_id=dealt.round_id),
            grpc.StatusCode.FAILED_PRECONDITION,
            "WRONG_PHASE",
            says="A",
        )

    fixed = good_piles(hands["A"])
    corrected = arrange(server, dealt.round_id, "A", fixed)
    assert not corrected.foul and corrected.foul_reason == ""
    assert corrected.ready_to_reveal
    assert (list(corrected.front), list(corrected.middle), list(corrected.back)) == fixed

    result = reveal(server, dealt.round_id)
    a = next(p for p in result.players if p.player_id == "A")
    assert not a.foul
    assert (list(a.front), list(a.middle), list(a.back)) == fixed


def test_r4_3_a_foul_left_at_the_deadline_loses_every_pile_when_the_sweeper_reveals(
    server: ServerThread, clock: ManualClock
) -> None:
    """R4.3, R10.3: after the deadline the sweeper reveals on its own; the player whose latest
    arrangement is a foul is foul; R6.3: the other wins all three piles as a scoop, 3 × 2."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    dealt = deal(server, "t")
    arrange_well(server, dealt, ["B"])
    arrange(server, dealt.round_id, "A", foul_piles(hands_of(dealt)["A"]))

    clock.advance(61)
    revealed = wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED)

    players = {p.player_id: p for p in revealed.result.players}
    assert players["A"].foul and players["A"].foul_reason
    assert not players["B"].foul
    assert (players["A"].points, players["B"].points) == (-6, 6)
    assert revealed.result.pairs[0].scoop
    assert balances(server, ["A", "B"]) == {"A": 1000 - 60, "B": 1000 + 60}
    assert get_table(server, "t").current_round_id == ""


def test_r4_3_a_missing_arrangement_is_foul_when_the_sweeper_reveals_at_the_deadline(
    server: ServerThread, clock: ManualClock
) -> None:
    """R4.3: 超时 — a player who never arranged is foul at the showdown; R10.3: the sweeper
    reveals the round once the deadline passes, without any call."""
    seated_table(server, "t", {"A": 500, "B": 500, "C": 500})
    dealt = deal(server, "t")
    arrange_well(server, dealt, ["B", "C"])

    clock.advance(59)  # still before the deadline: nothing happens
    assert get_round(server, dealt.round_id).phase == PHASE.ROUND_PHASE_DEALT
    clock.advance(2)
    revealed = wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED)

    players = {p.player_id: p for p in revealed.result.players}
    assert players["A"].foul
    assert players["A"].front == []
    assert players["A"].points == -12  # 6 to each of the two others (R6.3)
    assert sum(p.points for p in players.values()) == 0
    assert sum(p.coins for p in players.values()) == 0
    assert revealed.server_seed


def test_r6_4_when_nobody_arranges_everyone_is_foul_and_nobody_wins(
    server: ServerThread, clock: ManualClock
) -> None:
    """R4.3, R6.4: foul against foul is 0; the sweeper still reveals and settles nothing."""
    seated_table(server, "t", {"A": 500, "B": 500})
    dealt = deal(server, "t")
    clock.advance(60)
    revealed = wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED)
    assert [(p.foul, p.points, p.coins) for p in revealed.result.players] == [(True, 0, 0)] * 2
    assert balances(server, ["A", "B"]) == {"A": 500, "B": 500}


def test_r13_the_fujian_preset_and_custom_parameters_are_recorded_and_scored(
    server: ServerThread,
) -> None:
    """R13: a table records its ruleset in full; a preset with overrides is ``custom``; R6.1:
    the round is scored with the recorded pile bonuses."""
    parameters = table_pb2.RulesetParameters(scoop_multiplier=3, arrange_seconds=30)
    table = seated_table(
        server, "t", {"A": 1000, "B": 1000}, ruleset="fujian", parameters=parameters
    )
    assert table.ruleset == "custom"
    recorded = table.ruleset_parameters
    assert (recorded.scoop_multiplier, recorded.arrange_seconds) == (3, 30)
    assert dict(recorded.pile_bonuses.middle) == {
        "full_house": 2,
        "four_of_a_kind": 8,
        "straight_flush": 10,
    }
    assert get_table(server, "t").ruleset_parameters == recorded

    dealt = deal(server, "t")
    assert (dealt.deadline.ToSeconds() - dealt.dealt_at.ToSeconds()) == 30
    ruleset = FUJIAN.with_overrides({"scoop_multiplier": 3, "arrange_seconds": 30})
    submitted = {p: good_piles(cards, ruleset) for p, cards in hands_of(dealt).items()}
    for player, piles in submitted.items():
        arrange(server, dealt.round_id, player, piles)
    result = reveal(server, dealt.round_id)
    assert {p.player_id: p.points for p in result.players} == _score(submitted, ruleset)


@pytest.mark.parametrize(
    ("coins", "base"),
    [({"A": 48, "B": 100_000}, 1), ({"A": 479, "B": 480}, 1), ({"A": 4800, "B": 48_000}, 100)],
)
def test_r8_3_the_base_stake_is_the_bracket_of_the_lowest_balance_at_the_deal(
    server: ServerThread, coins: dict[str, int], base: int
) -> None:
    """R8.2, R8.3: the deal fixes the base from the lowest balance and records every balance."""
    seated_table(server, "t", coins)
    dealt = deal(server, "t")
    assert dealt.base_stake == base
    assert {p.player_id: p.balance_at_deal for p in dealt.players} == coins


def test_aip_158_rounds_are_listed_oldest_first_page_by_page(
    server: ServerThread, clock: ManualClock
) -> None:
    """R10.1: a table's rounds are numbered in order; ListRounds pages through them oldest first
    with an opaque token (table.proto, AIP-158)."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    ids = []
    for _ in range(3):
        dealt = deal(server, "t")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
        ids.append(dealt.round_id)

    first = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t", page_size=2))
    assert [r.round_id for r in first.rounds] == ids[:2]
    assert [r.number for r in first.rounds] == [1, 2]
    second = server.tables.ListRounds(
        table_pb2.ListRoundsRequest(table_id="t", page_size=2, page_token=first.next_page_token)
    )
    assert [r.round_id for r in second.rounds] == ids[2:]
    assert second.next_page_token == ""
    everything = server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t"))
    assert [r.round_id for r in everything.rounds] == ids
    assert all(r.phase == PHASE.ROUND_PHASE_REVEALED for r in everything.rounds)
