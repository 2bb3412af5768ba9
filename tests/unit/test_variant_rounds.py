"""R14 on the pure Table and Round aggregates: a table seats up to ``max_players``, and a
``puxian6`` round is dealt from 78 cards to six players, arranged with copies, revealed and scored
with the horse (R14.1, R14.2)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from domain.dealing import deal_record
from domain.errors import ArrangementError, SeatError
from domain.fairness.seeds import KeyRing
from domain.fairness.shuffle import deal
from domain.round import Round
from domain.rules.ruleset import PUXIAN5, PUXIAN6, STANDARD, Ruleset
from domain.rules.scoring import Seat, score_round
from domain.rules.suggest import suggest
from domain.table import Table

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEED = bytes(range(32))


def table(ruleset: Ruleset) -> Table:
    return Table.open("t1", ruleset, "", KeyRing.of([SEED]), bytes(16), "", T0)


@pytest.mark.parametrize(("ruleset", "seats"), [(STANDARD, 4), (PUXIAN5, 5), (PUXIAN6, 6)])
def test_r14_2_1_a_table_seats_up_to_max_players(ruleset: Ruleset, seats: int) -> None:
    """R10.1 as R14.2.1 amends it: 2 to ``max_players`` seats."""
    t = table(ruleset)
    for k in range(seats):
        t.sit_down(f"p{k}", T0)
    with pytest.raises(SeatError, match=f"is full \\({seats} seats\\)"):
        t.sit_down("late", T0)


def six_dealt(client_seed: str = "c") -> Round:
    return Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances=dict.fromkeys("ABCDEF", 1000),
            server_seed=SEED,
            client_seed=client_seed,
            ruleset=PUXIAN6,
            at=T0,
        )
    )


def test_r14_2_4_a_puxian6_round_is_dealt_arranged_revealed_and_scored_with_the_horse() -> None:
    """R14.2.3, R14.2.4: the six hands are the shuffle of 78 cards; R4.1 as a multiset: each
    player places their copies; R14.1, R14.2.6: the reveal scores 15 pairs, the horse holder's
    pairs doubled, the totals summing to zero."""
    holders: list[str] = []
    for client_seed in (f"c{n}" for n in range(40)):  # a deal where someone holds 8h
        round_ = six_dealt(client_seed)
        holders = [p for p in "ABCDEF" if PUXIAN6.holds_horse(round_.hand(p))]
        if len(holders) == 1:
            break
    assert len(holders) == 1
    hands = [round_.hand(p) for p in "ABCDEF"]
    expected = deal(SEED, client_seed, "r1", 6, deck=PUXIAN6.deck, max_players=6)
    assert hands == list(expected)
    held = Counter(c for hand in hands for c in hand)
    assert held == Counter(PUXIAN6.deck)
    for p in "ABCDEF":
        a = suggest(round_.hand(p), PUXIAN6).arrangement
        assert round_.arrange(p, list(a.front), list(a.middle), list(a.back), T0) is None
    outcome = round_.reveal(SEED, T0 + timedelta(seconds=1))
    assert len(outcome.score.pairs) == 15
    assert sum(outcome.score.points) == 0
    plain = PUXIAN6.with_overrides({"horse_card": "none"})
    without = score_round([Seat(p, round_.play_of(p), round_.hand(p)) for p in "ABCDEF"], plain)
    for horsed, bare in zip(outcome.score.pairs, without.pairs, strict=True):
        factor = 2 if holders[0] in (horsed.a, horsed.b) else 1
        assert horsed.points == bare.points * factor
    assert sum(outcome.coins.values()) == 0


def test_r14_2_3_a_round_refuses_a_card_placed_more_often_than_dealt() -> None:
    """R14.2.3: R4.1 as a multiset on the aggregate: a copy the player was not dealt is refused
    and nothing is recorded."""
    round_ = six_dealt()
    round_.collect_events()
    hand = list(round_.hand("A"))
    twice = next(c for c in hand if hand.count(c) == 1)
    others = [c for c in hand if c != twice][:11]
    piles = [twice, twice, *others]
    with pytest.raises(ArrangementError, match=f"card {twice} is used twice"):
        round_.arrange("A", piles[:3], piles[3:8], piles[8:], T0)
    assert round_.collect_events() == []
