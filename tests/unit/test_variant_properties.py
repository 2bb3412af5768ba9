"""R14's invariants as properties over random rounds under random variant rulesets (hypothesis):
the totals sum to zero, each pair is antisymmetric, the horse multiplies exactly its holders'
pairs, and no round holds more copies of a card than its deck."""

from __future__ import annotations

import contextlib
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from domain.errors import SpecialError
from domain.fairness.shuffle import deal
from domain.rules.arrangement import Arrangement
from domain.rules.cards import DECK, Card
from domain.rules.play import NO_ARRANGEMENT, Play, declare
from domain.rules.ruleset import STANDARD, Ruleset
from domain.rules.scoring import RoundScore, Seat, score_round
from domain.rules.specials import BASE_SPECIALS
from domain.rules.suggest import suggest

EXTRA_SUITS = ["", "d", "h", "dc", "sh"]
BONUS_CATEGORIES = ["full_house", "four_of_a_kind", "straight_flush", "five_of_a_kind", "flush"]


@st.composite
def variant_rulesets(draw: st.DrawFn) -> Ruleset:
    """Any ruleset of R14's parameters in their ranges, with R13's in theirs (R14.5.5)."""
    suits = draw(st.sampled_from(EXTRA_SUITS))
    removed = draw(st.lists(st.sampled_from([s.id for s in BASE_SPECIALS]), max_size=3))
    return STANDARD.with_overrides(
        {
            "extra_suits": list(suits),
            "max_players": draw(st.integers(2, 4 + len(suits))),
            "horse_card": draw(st.sampled_from(["none", "8h", "As", "2d", "Tc"])),
            "horse_multiplier": draw(st.integers(2, 4)),
            "horse_both_holders": draw(st.sampled_from(["cancel", "stack"])),
            "group_kickers": draw(st.booleans()),
            "flush_pairs_first": draw(st.booleans()),
            "special_counting": draw(st.sampled_from(["exact", "partition"])),
            "extra_specials": draw(
                st.lists(st.sampled_from(["two_fives_one_trips", "six_of_a_kind"]), unique=True)
            ),
            "roll_over_counts_as_scoop": draw(st.booleans()),
            "scoop_bonus": draw(st.integers(0, 3)),
            "special_order": draw(st.sampled_from(["table", "points"])),
            "special_points": dict.fromkeys(removed),
            "scoop_multiplier": draw(st.integers(1, 4)),
            "home_run_multiplier": draw(st.integers(1, 4)),
            "home_run_min_players": draw(st.integers(3, 6)),
            "foul_counts_for_home_run": draw(st.booleans()),
            "quad_counts_as_two_pairs": draw(st.booleans()),
            "wheel": draw(st.sampled_from(["second", "lowest"])),
            "pile_bonuses": {
                "front": {"three_of_a_kind": draw(st.integers(1, 5))},
                "middle": {draw(st.sampled_from(BONUS_CATEGORIES)): draw(st.integers(1, 20))},
                "back": {draw(st.sampled_from(BONUS_CATEGORIES)): draw(st.integers(1, 10))},
            },
        }
    )


@st.composite
def variant_rounds(draw: st.DrawFn) -> tuple[list[Seat], Ruleset]:
    """2 to ``max_players`` players dealt from the ruleset's deck of N cards (R14.2.3); each
    arranges at random, by the suggestion, declares a special when they can, or never arranges."""
    ruleset = draw(variant_rulesets())
    deck = draw(st.permutations(ruleset.deck))
    players = draw(st.integers(2, ruleset.max_players))
    seats = []
    for k in range(players):
        hand = tuple(deck[13 * k : 13 * k + 13])
        how = draw(st.sampled_from(["random", "random", "suggested", "special", "none"]))
        play: Play = NO_ARRANGEMENT
        if how == "suggested":
            play = Play(suggest(hand, ruleset).arrangement)
        elif how != "none":
            play = Play(Arrangement.of(hand[:3], hand[3:8], hand[8:], dealt=hand))
            if how == "special":
                with contextlib.suppress(SpecialError):
                    play = declare(hand, "any", ruleset)
        seats.append(Seat(f"P{k}", play, hand))
    return seats, ruleset


def _by_pair(score: RoundScore) -> dict[frozenset[str], tuple[str, int]]:
    return {frozenset((p.a, p.b)): (p.a, p.points) for p in score.pairs}


@given(variant_rounds())
def test_r14_1_4_totals_sum_to_zero_and_pairs_are_antisymmetric(
    case: tuple[list[Seat], Ruleset],
) -> None:
    """R6.8, R14.1.4, R14.2.6: the totals sum to zero; every pair is compared once (10 or 15
    pairs with five or six) and what A gains against B, B loses against A, whatever the seat
    order."""
    seats, ruleset = case
    forward = score_round(seats, ruleset)
    assert sum(forward.points) == 0
    assert len(forward.pairs) == len(seats) * (len(seats) - 1) // 2
    backward = score_round(list(reversed(seats)), ruleset)
    totals = {p.player_id: p.points for p in forward.players}
    assert {p.player_id: p.points for p in backward.players} == totals
    back = _by_pair(backward)
    for key, (a, points) in _by_pair(forward).items():
        b_first, b_points = back[key]
        assert b_first != a and b_points == -points
    assert all(abs(p) <= ruleset.max_round_points for p in forward.points)  # R14 limits


@given(variant_rounds())
def test_r14_1_3_the_horse_multiplies_exactly_its_holders_pairs(
    case: tuple[list[Seat], Ruleset],
) -> None:
    """R14.1.2–R14.1.5: against the same round without a horse, each pair's points are
    multiplied by its horse factor, the pairs of non-holders are unchanged, and no scoop or
    home run comes or goes."""
    seats, ruleset = case
    if ruleset.horse_card is None:
        ruleset = ruleset.with_overrides({"horse_card": "8h"})
    plain = score_round(seats, ruleset.with_overrides({"horse_card": "none"}))
    horsed = score_round(seats, ruleset)
    holds = {s.player_id: ruleset.holds_horse(s.cards or ()) for s in seats}
    for without, with_horse in zip(plain.pairs, horsed.pairs, strict=True):
        factor = ruleset.horse_factor(holds[without.a], holds[without.b])
        assert with_horse.points == without.points * factor
        if not (holds[without.a] or holds[without.b]):
            assert with_horse.points == without.points
        assert (with_horse.scoop, with_horse.home_run) == (without.scoop, without.home_run)


@given(
    st.sampled_from(EXTRA_SUITS),
    st.binary(min_size=32, max_size=32),
    st.text(max_size=8),
    st.data(),
)
def test_r14_2_3_no_deal_holds_more_copies_of_a_card_than_its_deck(
    suits: str, seed: bytes, client_seed: str, data: st.DataObject
) -> None:
    """R14.2.3, R14.2.4: the shuffle over N cards deals each card as often as the deck holds
    it, at most, and with every seat filled all of them."""
    ruleset = STANDARD.with_overrides({"extra_suits": list(suits), "max_players": 4 + len(suits)})
    players = data.draw(st.integers(2, ruleset.max_players))
    hands = deal(
        seed, client_seed, "r", players, deck=ruleset.deck, max_players=ruleset.max_players
    )
    held = Counter(c for hand in hands for c in hand)
    assert all(held[card] <= ruleset.copies[card] for card in held)
    assert all(isinstance(c, Card) and 0 <= c < len(DECK) for c in held)
    if 13 * players == len(ruleset.deck):
        assert held == Counter(ruleset.deck)
