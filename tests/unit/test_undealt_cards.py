"""R14.2.4 on the pure Round: the cards no one was dealt, recomputed from the revealed seed and
the recorded deal, with R14.2.5's test vector; none before the reveal, and none under a ruleset
of R13 alone."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from domain import visibility
from domain.dealing import deal_record, undealt_cards
from domain.errors import RuleError
from domain.round import Round
from domain.rules.cards import format_cards
from domain.rules.ruleset import PUXIAN6, STANDARD, Ruleset
from domain.rules.suggest import suggest

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ZERO = bytes(32)  # R14.2.5: server_seed = 32 zero bytes, client_seed "client", round_id "r1"


def dealt(ruleset: Ruleset, players: str) -> Round:
    return Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances=dict.fromkeys(players, 1000),
            server_seed=ZERO,
            client_seed="client",
            ruleset=ruleset,
            at=T0,
        )
    )


def revealed(round_: Round) -> Round:
    for player in round_.players:
        a = suggest(list(round_.hand(player)), round_.ruleset).arrangement
        at = T0 + timedelta(seconds=1)
        round_.arrange(player, list(a.front), list(a.middle), list(a.back), at)
    round_.reveal(ZERO, T0 + timedelta(seconds=2))
    return round_


def test_r14_2_5_four_players_at_a_puxian6_table_leave_26_cards_undealt() -> None:
    """R14.2.5's vector (extra suits d c, four players): the undealt cards begin Kh 4c Th 5c 3h
    6d; with the hands they are the 78-card deck, each copy once (R14.2.3). Before the reveal
    the seed is secret, so there is nothing to show (R12.1)."""
    round_ = dealt(PUXIAN6, "ABCD")
    assert not visibility.shows_undealt(round_)
    with pytest.raises(RuleError, match="server seed is secret"):
        undealt_cards(round_)
    rest = format_cards(undealt_cards(revealed(round_)))
    assert visibility.shows_undealt(round_)
    assert len(rest) == 26 and rest[:6] == ["Kh", "4c", "Th", "5c", "3h", "6d"]
    dealt_cards = [card for player in round_.players for card in round_.hands[player]]
    assert Counter(rest) + Counter(dealt_cards) == Counter(format_cards(PUXIAN6.deck))


def test_r14_2_4_a_standard_round_publishes_no_undealt_cards() -> None:
    """R14's defaults leave R12 as it is: three standard players leave 13 cards undealt and
    none is published."""
    assert undealt_cards(revealed(dealt(STANDARD, "ABC"))) == ()
