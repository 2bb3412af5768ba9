"""R14 through a real server: tables on the puxian presets seat five or six, deal decks with
copies of a card, publish the undealt cards at the reveal and score the horse (R14.1, R14.2,
R14.6), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from domain.fairness.shuffle import undealt
from domain.rules.cards import format_cards, parse_cards
from domain.rules.ruleset import ALL_PRESETS, Ruleset
from domain.rules.suggest import suggest
from tests.e2e.helpers import (
    Piles,
    arrange,
    deal,
    events,
    get_round,
    hands_of,
    of_type,
    reveal,
    seated_table,
)
from tests.support.server import ServerThread


def piles_for(cards: Sequence[str], ruleset: Ruleset) -> Piles:
    """A non-foul arrangement of a hand that may hold two copies of a card (R4.2, R14.2.3)."""
    hand = parse_cards(cards, copies=ruleset.copies)
    arrangement = suggest(hand, ruleset).arrangement
    return (
        format_cards(arrangement.front),
        format_cards(arrangement.middle),
        format_cards(arrangement.back),
    )


def play_round(server: ServerThread, table_id: str, ruleset: Ruleset) -> tuple[str, list[str]]:
    """Deal, every player arranges as suggested; returns the round id and its players."""
    dealt = deal(server, table_id)
    for player, cards in hands_of(dealt).items():
        reply = arrange(server, dealt.round_id, player, piles_for(cards, ruleset))
        assert not reply.foul, reply.foul_reason
    return dealt.round_id, [p.player_id for p in dealt.players]


def test_r14_2_4_the_undealt_cards_are_published_at_the_reveal_and_not_before(
    server: ServerThread,
) -> None:
    """R14.2.4: four players at a puxian6 table leave 26 of the 78 cards undealt. Before the
    reveal nobody learns them (R12.1: they follow from the secret seed): not the players, not an
    observer, not the dealing game server, not a watcher. The reveal publishes them in deck
    order, the same in Reveal, GetRound and WatchTable; with the hands they make up the deck,
    and they are what the shuffle leaves from the revealed seed."""
    rules = ALL_PRESETS["puxian6"]
    players = ["A", "B", "C", "D"]
    seated_table(server, "t", dict.fromkeys(players, 1000), ruleset="puxian6")
    dealt = deal(server, "t", client_seed="lucky")
    assert list(dealt.undealt_cards) == []
    for viewer in ["", "A", "Z"]:
        assert list(get_round(server, dealt.round_id, viewer).undealt_cards) == []
    hands = hands_of(dealt)
    for player in players:
        arrange(server, dealt.round_id, player, piles_for(hands[player], rules))
        assert list(get_round(server, dealt.round_id, player).undealt_cards) == []
    for viewer in ["", "A"]:
        seen = events(server, "t", of_type("HandSubmitted", "D"), viewer=viewer)
        assert [m for m in seen if m.round.undealt_cards] == []

    revealed = reveal(server, dealt.round_id)
    rest = list(revealed.undealt_cards)
    assert len(rest) == 78 - 4 * 13
    expected = undealt(
        bytes.fromhex(revealed.server_seed), "lucky", dealt.round_id, 4, rules.deck, 6
    )
    assert rest == format_cards(expected)
    for viewer in ["", "A", "Z"]:
        assert list(get_round(server, dealt.round_id, viewer).undealt_cards) == rest
    shown = events(server, "t", of_type("RoundRevealed"))[-1]
    assert list(shown.round.undealt_cards) == rest
    whole = Counter(rest) + Counter(c for cards in hands.values() for c in cards)
    assert whole == Counter(format_cards(rules.deck))  # R14.2.3: every copy, once
