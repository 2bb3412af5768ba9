"""R14: the regional variants — the rule book's worked examples 1–7 of R14, the R14.2.5 test
vectors, and each variant rule on its own."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from domain.dealing import deal_record
from domain.errors import ArrangementError, CardError, DeclarationRefused, RuleError
from domain.fairness.shuffle import deal, shuffled_deck, undealt
from domain.rules.arrangement import Arrangement
from domain.rules.cards import DECK, Card, deck_of, parse_cards
from domain.rules.hands import Category, PileOrder, category_of, describe, describe_both, value5
from domain.rules.play import NO_ARRANGEMENT, Play, declare
from domain.rules.ruleset import PUXIAN, PUXIAN5, STANDARD, Ruleset, resolve
from domain.rules.scoring import Seat, score_round
from domain.rules.specials import Special, qualifies, qualifying
from domain.rules.suggest import suggest

# The rule book's worked examples of R1–R13 that R14's examples build on.
EX1_A = "Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As"
EX1_B = "Kh 7d 4c | Td Tc 6h 6c 2h | 3d 4d 5c 6d 7h"
EX2_D = "Kh 7d 4c | Td 9d 6d 6c 2d | 2h 6h 8h Jh Ah"
EX3 = {
    "A": "Ks Kh 2c | 9s 9c 9d 5h 5d | 4c 5c 6c 7c 8c",
    "B": "2d 3h 4h | 5s 6d 6h 7h 8s | Tc Js Qd Kd As",
    "C": "4d 6s 7d | 8d 8h Td Ts Jd | Jh Qh Qs Ad Ah",
    "D": "2h 2s 3c | 3d 3s 4s 7s 9h | Th Jc Qc Kc Ac",
}


def cards(text: str, ruleset: Ruleset = STANDARD) -> tuple[Card, ...]:
    return parse_cards(text.replace("|", " ").split(), copies=ruleset.copies)


def seat(player: str, text: str, ruleset: Ruleset = STANDARD) -> Seat:
    piles = [parse_cards(p.split(), copies=ruleset.copies) for p in text.split("|")]
    hand = tuple(c for pile in piles for c in pile)
    return Seat(player, Play(Arrangement.of(*piles, dealt=hand)), hand)


def totals(ruleset: Ruleset, hands: dict[str, str]) -> dict[str, int]:
    score = score_round([seat(p, h, ruleset) for p, h in hands.items()], ruleset)
    return {p.player_id: p.points for p in score.players}


# Worked examples ---------------------------------------------------------------------------


@pytest.mark.parametrize("horse", ["8s", "7h"])
def test_r14_1_example_1_the_horse_doubles_its_holders_pair_wins_and_losses(horse: str) -> None:
    """R14.1.2–R14.1.4: A holds 8s, B holds 7h; either way the pair's +1 for A doubles."""
    rules = resolve({"horse_card": horse})
    assert totals(rules, {"A": EX1_A, "B": EX1_B}) == {"A": 2, "B": -2}


def test_r14_1_5_example_2_the_horse_and_a_home_run() -> None:
    """R14.1.4, R14.1.5, R14.5.6: the rule book's example 3 with C holding the horse Ah: the
    pairs with C double, the home run stands, A +48, B −14, C −24, D −10."""
    rules = resolve({"horse_card": "Ah"})
    assert totals(rules, EX3) == {"A": 48, "B": -14, "C": -24, "D": -10}
    score = score_round([seat(p, h) for p, h in EX3.items()], rules)
    assert [p.home_run for p in score.pairs if p.a == "A"] == [True, True, True]
    assert "C holds the horse Ah: ×2." in score.pairs[1].explanation


EX3_HANDS = {
    "A": "2c 3d 5h | 8h 8c 4d 6s 9c | Tc Td Th 4c 7d",
    "B": "4h 6c 7s | 8h 8d Ks 3h 2d | Jc Jd Jh 3s 5s",
    "C": "2h 3c 6d | Qc Qd 4s 5c 7c | Kc Kh 9d 9h 2s",
}


@pytest.mark.parametrize(("both", "expected"), [("cancel", (-8, 8, 0)), ("stack", (-26, 26, 0))])
def test_r14_1_3_example_3_two_holders_cancel_or_stack(
    both: str, expected: tuple[int, int, int]
) -> None:
    """R14.1.3: with a second suit of hearts, A and B both hold 8h."""
    rules = resolve({"extra_suits": ["h"], "horse_card": "8h", "horse_both_holders": both})
    assert tuple(totals(rules, EX3_HANDS).values()) == expected


def test_r14_3_1_example_4_five_of_a_kind_and_its_pile_bonuses() -> None:
    """R14.3.1, R14.3.2: A's middle and back are five of a kind; A wins all three piles."""
    hands = {
        "A": "Kc Kh 2s | 4c 4d 4d 4h 4s | 6c 6d 6d 6h 6s",
        "B": "Qc Qd 3s | 8h 9h Th Jh Qh | 9s Ts Js Qs Ks",
    }
    assert totals(resolve({"extra_suits": ["d"]}), hands) == {"A": 6, "B": -6}
    no_horse = PUXIAN5.with_overrides({"horse_card": "none"})
    assert totals(no_horse, hands) == {"A": 62, "B": -62}


EX5 = {
    "A": "Qc Qd Qh | 9s Ts Js Qs Ks | Ac Ad Ad Ah As",
    "B": "4c 4d 4d | Kc Kd Kd Kh 4s | 8c 8d 8d 8h 8s",
    "C": "3c 3d 3d | Jc Jd Jd Jh 3s | 7c 7d 7d 7h 7s",
    "D": "2c 2d 2d | Tc Td Td Th 2h | 6c 6d 6d 6h 6s",
    "E": "Qd 4h 3h | 9c 9d 9d 9h 2s | 5c 5d 5d 5h 5s",
}


def test_r14_2_6_example_5_five_seats_compare_ten_pairs() -> None:
    """R14.2.1, R14.2.3, R14.2.6: five players share all 65 cards; every earlier seat scoops
    every later one and A's home run makes its pairs 12."""
    rules = resolve({"max_players": 5, "extra_suits": ["d"]})
    dealt = sorted(c for hand in EX5.values() for c in cards(hand, rules))
    assert dealt == sorted(rules.deck)
    score = score_round([seat(p, h, rules) for p, h in EX5.items()], rules)
    assert len(score.pairs) == 10
    assert {p.player_id: p.points for p in score.players} == {
        "A": 48,
        "B": 6,
        "C": -6,
        "D": -18,
        "E": -30,
    }


def test_r14_2_1_example_5_a_deal_of_five_is_refused_under_max_players_4() -> None:
    """R14.2.1: five seated players on a four-seat ruleset are not dealt."""
    balances = dict.fromkeys("ABCDE", 1000)
    four = resolve({"extra_suits": ["d"]})
    with pytest.raises(RuleError, match="max_players is 4"):
        deal_record(**_deal_args(balances, four))
    five = resolve({"max_players": 5, "extra_suits": ["d"]})
    record = deal_record(**_deal_args(balances, five))
    assert [len(h) for h in record["hands"].values()] == [13] * 5


def _deal_args(balances: dict[str, int], ruleset: Ruleset) -> dict[str, Any]:
    return dict(
        round_id="r1",
        table_id="t",
        number=1,
        balances=balances,
        server_seed=bytes(32),
        client_seed="client",
        ruleset=ruleset,
        at=datetime(2026, 12, 1, tzinfo=UTC),
    )


def test_r14_5_1_example_6_a_roll_over_is_not_a_scoop_when_switched_off() -> None:
    """R14.5.1: the rule book's example 2 (A wins two piles, the backs tie) scores its plain
    points, +2, and no scoop."""
    rules = resolve({"roll_over_counts_as_scoop": False})
    assert totals(rules, {"A": EX1_A, "D": EX2_D}) == {"A": 2, "D": -2}
    assert totals(STANDARD, {"A": EX1_A, "D": EX2_D}) == {"A": 4, "D": -4}


EX7 = "5c 5d 5d 5h 5s 9c 9d 9h 9s Kc Kd Kh Ks"


def test_r14_4_1_example_7_three_quads_from_five_fives_only_under_partition() -> None:
    """R14.4.1: ranks held 5 + 4 + 4 are three quads by partition, not exactly."""
    exact = resolve({"extra_suits": ["d"]})
    with pytest.raises(DeclarationRefused):
        declare(cards(EX7, exact), "three_quads", exact)
    partition = exact.with_overrides({"special_counting": "partition"})
    play = declare(cards(EX7, partition), "three_quads", partition)
    normal = seat("B", EX1_B, partition)
    score = score_round([Seat("A", play, cards(EX7, partition)), normal], partition)
    assert score.points == [20, -20]


# R14.2.5: the deal over N cards ---------------------------------------------------------------


def test_r14_2_5_five_players_with_a_second_suit_of_diamonds() -> None:
    """R14.2.4, R14.2.5: N = 65; seats 0, 1 and 4 of the rule book's vector."""
    hands = deal(bytes(32), "client", "r1", 5, deck=deck_of("d"), max_players=5)
    assert " ".join(map(str, hands[0])) == "Qh 7d Jc 9d Jh 4c 8s 7d 3d 3c 9c Jd 6d"
    assert " ".join(map(str, hands[1])) == "2d Ah 3d Th Kd Js Kd 9h Ks 7h 5s 8h 2d"
    assert " ".join(map(str, hands[4])) == "As Tc 9s 3h 7c Ad Td Qs 5h 4h Ad 5d Qd"


def test_r14_2_5_six_players_and_the_undealt_cards_of_four() -> None:
    """R14.2.4, R14.2.5: N = 78; seats 0 and 5, and with four players 26 cards undealt."""
    hands = deal(bytes(32), "client", "r1", 6, deck=deck_of("dc"), max_players=6)
    assert " ".join(map(str, hands[0])) == "3c Tc Kd 6d Td 7s 4c 7c 4d Qc 7d Kd 5d"
    assert " ".join(map(str, hands[5])) == "Ac Qd Ks 7c 9d 6c Js 5c Ac 2h Tc 7h 4h"
    rest = undealt(bytes(32), "client", "r1", 4, deck=deck_of("dc"), max_players=6)
    assert len(rest) == 26
    assert " ".join(map(str, rest[:6])) == "Kh 4c Th 5c 3h 6d"


def test_r14_2_4_with_52_cards_the_shuffle_is_r12_s() -> None:
    """R14.2.4: N = 52 changes nothing (R12.7 stands)."""
    assert shuffled_deck(bytes(32), "c", "r", deck=deck_of("")) == shuffled_deck(
        bytes(32), "c", "r"
    )
    assert deck_of("") == DECK


def test_r14_2_3_the_deck_appends_each_extra_suit_in_order() -> None:
    """R14.2.3: 52 cards, then each extra suit's 13 cards 2 … A, in the listed order."""
    deck = deck_of("dc")
    assert len(deck) == 78
    assert " ".join(map(str, deck[52:54] + deck[64:67])) == "2d 3d Ad 2c 3c"
    assert PUXIAN5.copies[parse_cards(["7d"])[0]] == 2
    assert PUXIAN5.copies[parse_cards(["7c"])[0]] == 1


def test_r14_2_3_an_arrangement_places_each_card_as_often_as_it_was_dealt() -> None:
    """R14.2.3: R4.1 as a multiset: a card dealt twice is placed twice, not three times."""
    rules = PUXIAN5
    hand = cards("4c 4d 4d 4h 4s 6c 6d 6d 6h 6s Kc Kh 2s", rules)
    ok = Arrangement.of(hand[10:], hand[:5], hand[5:10], dealt=hand)
    assert ok.foul_reason(rules.pile_order) is None
    once = cards("4c 4d 5d 4h 4s 6c 6d 6d 6h 6s Kc Kh 2s", rules)
    with pytest.raises(ArrangementError, match="4d is used twice"):
        Arrangement.of(hand[10:], hand[:5], hand[5:10], dealt=once)
    with pytest.raises(CardError, match="4d appears 3 times"):
        parse_cards(["4d", "4d", "4d"], copies=rules.copies)


def test_r14_2_2_five_seats_need_an_extra_suit() -> None:
    """R14.2.1, R14.2.2: 13 × max_players ≤ 52 + 13 × len(extra_suits), refused naming it."""
    with pytest.raises(RuleError, match="5 players need 65 cards and the deck has 52") as refused:
        resolve({"max_players": 5})
    assert refused.value.field == "ruleset.max_players"
    assert resolve({"max_players": 6, "extra_suits": ["d", "c"]}).max_players == 6


# R14.3: five of a kind and ties ---------------------------------------------------------------


def test_r14_3_1_five_of_a_kind_beats_a_straight_flush_and_counts_in_the_foul_check() -> None:
    """R14.3.1: the tenth category, strongest; its key is its rank."""
    rules = PUXIAN5
    five = value5(cards("4c 4d 4d 4h 4s", rules))
    assert category_of(five) is Category.FIVE_OF_A_KIND
    assert five > value5(cards("Ts Js Qs Ks As"))
    assert value5(cards("5c 5d 5d 5h 5s", rules)) > five
    piles = cards("2c 3c 4s"), cards("4c 4d 4d 4h 4s", rules), cards("Ts Js Qs Ks As")
    back_weaker = Arrangement.of(*piles, dealt=tuple(c for pile in piles for c in pile))
    assert back_weaker.foul_reason() == (
        "middle (five of a kind, 4s) beats back (straight flush, A-high)"
    )


def test_r14_3_2_a_won_five_of_a_kind_pile_not_listed_is_worth_1() -> None:
    """R14.3.2: pile_bonuses may name five_of_a_kind; unnamed it is worth 1."""
    assert STANDARD.pile_worth(1, Category.FIVE_OF_A_KIND) == 1
    assert PUXIAN.pile_worth(1, Category.FIVE_OF_A_KIND) == 20
    assert PUXIAN.pile_worth(2, Category.FIVE_OF_A_KIND) == 10
    with pytest.raises(RuleError, match="a front cannot be a five of a kind"):
        resolve({"pile_bonuses": {"front": {"five_of_a_kind": 3}}})


def test_r14_3_3_copies_tie_and_group_kickers_off_compares_the_group_only() -> None:
    """R14.3.3: two piles of the same cards tie; without group kickers, trips, full houses and
    quads compare by the group's rank alone."""
    rules = PUXIAN5
    assert value5(cards("9c 9d 9h Ad 2d", rules)) == value5(cards("9c 9d 9h Ad 2d", rules))
    kept = PileOrder("second", True, False)
    bare = PileOrder("second", False, False)
    trips_a, trips_k = cards("9c 9d 9h Ac 2d"), cards("9s 9d 9h Kc Qd", rules)
    assert value5(trips_a, kept) > value5(trips_k, kept)
    assert value5(trips_a, bare) == value5(trips_k, bare)
    full_a, full_k = cards("9c 9d 9h Ac Ad"), cards("9s 9d 9h Kc Kd", rules)
    assert value5(full_a, bare) == value5(full_k, bare)
    assert describe(value5(full_a, bare)) == "full house, 9s"
    quads = value5(cards("9c 9d 9h 9s Ad"), bare), value5(cards("9c 9d 9h 9s 2d"), bare)
    assert quads[0] == quads[1]
    assert value5(cards("Tc Td Th 2s 3d"), bare) > value5(trips_a, bare)


def test_r14_3_4_flush_pairs_first_puts_two_pairs_over_one_over_none() -> None:
    """R14.3.4: among flushes, more pairs win, then the pairs, then the five ranks."""
    rules = resolve({"extra_suits": ["d", "h"]})
    order = PileOrder("second", True, True)
    two = value5(cards("4d 4d 7d 7d 2d", rules), order)
    one = value5(cards("Kd Kd Qd Jd 9d", rules), order)
    none = value5(cards("Ad Kd Qd Jd 9d", rules), order)
    assert two > one > none
    assert value5(cards("5d 5d 7d 7d 2d", rules), order) > two
    plain = PileOrder()
    assert value5(cards("Ad Kd Qd Jd 9d"), plain) > value5(cards("Kd Kd Qd Jd 9d", rules), plain)
    assert category_of(one) is Category.FLUSH
    assert describe(two) == "flush, 7-high"
    # Two flushes the short words tell apart only by their deciding ranks: each pair's rank
    # once, then the kicker, and no rank a flush does not hold (it read "K 5 A 2 2").
    kk55, kk66 = (value5(cards(f"Ad Kd Kd {r} {r}", rules), order) for r in ("5d", "6d"))
    assert describe_both(kk55, kk66) == ("flush, A-high (K 5 A)", "flush, A-high (K 6 A)")
    one_pair = value5(cards("Ad Kd Kd 9d 5d", rules), order)
    assert describe_both(one_pair, value5(cards("Ad Kd Kd 9d 4d", rules), order))[0] == (
        "flush, A-high (K A 9 5)"
    )


# R14.4: specials with copies --------------------------------------------------------------------

PARTITION = resolve({"extra_suits": ["d", "c"], "special_counting": "partition"})
EXACT = PARTITION.with_overrides({"special_counting": "exact"})


@pytest.mark.parametrize(
    ("special", "text", "exact", "partition"),
    [
        (Special.FOUR_TRIPS, "2c 2c 2d 2d 2h 2s 5c 5d 5h Kc Kd Kh 3s", False, True),
        (Special.SIX_PAIRS, "2c 2c 2d 2d 5c 5d 7h 7s 9c 9d Kh Ks 3s", False, True),
        (Special.FIVE_PAIRS_TRIPS, "2c 2c 2d 2d 2h 5c 5d 7h 7s 9c 9d Kh Ks", False, True),
        (Special.THREE_QUADS, "2c 2d 2h 2s 5c 5d 5h 5s 9c 9d 9h 9s Kd", True, True),
    ],
)
def test_r14_4_1_exact_and_partition_counting(
    special: Special, text: str, exact: bool, partition: bool
) -> None:
    """R14.4.1: ``exact`` keeps R5.1's groups (one from a rank), ``partition`` counts ⌊n/k⌋."""
    hand = cards(text, PARTITION)
    assert (qualifies(special, hand, counting=EXACT.counting) is not None) is exact
    assert (qualifies(special, hand, counting=PARTITION.counting) is not None) is partition


def test_r14_4_2_split_specials_split_the_cards_as_a_multiset() -> None:
    """R14.4.2: two copies of a card are two cards in a split; a five of a kind is a monster."""
    rules = PUXIAN5.with_overrides({"special_points": {"two_monsters_front_trips": 6}})
    hand = cards("Ac Ad Ah 9c 9d 9d 9h 9s 4c 4d 4d 4h 4s", rules)
    found = qualifies(Special.TWO_MONSTERS_FRONT_TRIPS, hand)
    assert found is not None and found.split is not None
    assert sorted(found.split.cards) == sorted(hand)
    flushes = cards("2d 2d 5d 7d 9d 3h 4h 6h 8h Th Qh Kh Ah", rules)
    three = qualifies(Special.THREE_FLUSHES, flushes)
    assert three is not None and three.split is not None
    assert sorted(three.split.cards) == sorted(flushes)


def test_r14_4_3_extra_specials_rank_after_three_quads_and_only_when_enabled() -> None:
    """R14.4.3: two_fives_one_trips and six_of_a_kind, declarable only where enabled, 20
    points by default, right after three_quads in R5.2's order."""
    deck = resolve({"extra_suits": ["d", "c"]})
    fives = cards("4c 4c 4d 4d 4h 9c 9c 9d 9d 9s Kd Kh Ks", deck)
    with pytest.raises(DeclarationRefused, match="cannot be declared"):
        declare(fives, "two_fives_one_trips", deck)
    enabled = deck.with_overrides({"extra_specials": ["six_of_a_kind", "two_fives_one_trips"]})
    assert enabled.extra_specials == (Special.TWO_FIVES_ONE_TRIPS, Special.SIX_OF_A_KIND)
    assert declare(fives, "any", enabled).special is Special.TWO_FIVES_ONE_TRIPS
    assert enabled.points_of(Special.TWO_FIVES_ONE_TRIPS) == 20
    six = cards("4c 4c 4d 4d 4h 4s 9c 9d 9h Kc Kd Kh 2s", enabled)
    assert [q.special for q in qualifying(six, specials=enabled.specials)][:1] == [
        Special.SIX_OF_A_KIND
    ]
    assert Special.THREE_QUADS.beats(Special.TWO_FIVES_ONE_TRIPS)
    assert Special.SIX_OF_A_KIND.beats(Special.ALL_BIG)


# R14.5: scoring options -------------------------------------------------------------------------


def test_r14_5_2_a_scoop_bonus_is_added_after_the_multiplier_and_for_a_foul() -> None:
    """R14.5.2: (pile points × scoop_multiplier) + scoop_bonus; a foul counts as a scoop."""
    rules = resolve({"scoop_bonus": 3})
    assert totals(rules, {"A": EX1_A, "D": EX2_D}) == {"A": 7, "D": -7}
    foul = "3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac"
    assert totals(rules, {"A": EX1_A, "D": foul}) == {"A": 9, "D": -9}


def test_r14_5_3_special_order_by_points() -> None:
    """R14.5.3: under ``points`` the special worth more wins its points; equal points tie."""
    six_pairs = cards("2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As")
    flushes = cards("Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Th")
    worth = {"special_points": {"six_pairs": 4, "three_flushes": 9}}
    by_table = resolve(worth)
    by_points = resolve(worth | {"special_order": "points"})
    same = resolve(
        {"special_points": {"six_pairs": 5, "three_flushes": 5}, "special_order": "points"}
    )

    def score(rules: Ruleset) -> list[int]:
        plays = [declare(six_pairs, "six_pairs", rules), declare(flushes, "three_flushes", rules)]
        seats = [Seat("B", plays[0], six_pairs), Seat("C", plays[1], flushes)]
        return score_round(seats, rules).points

    assert score(by_table) == [4, -4]
    assert score(by_points) == [-9, 9]
    assert score(same) == [0, 0]


def test_r14_5_4_a_special_absent_from_special_points_cannot_be_declared() -> None:
    """R14.5.4: puxian has no two_monsters_front_trips; its recorded form keeps it out."""
    hand = cards("Ac Ad Ah 9c 9d 9h 9s 2c 3c 4c 5c 6c Kd")
    assert declare(hand, "two_monsters_front_trips", STANDARD).special is not None
    with pytest.raises(DeclarationRefused, match="cannot be declared under ruleset puxian"):
        declare(hand, "two_monsters_front_trips", PUXIAN)
    assert PUXIAN.to_dict()["special_points"]["two_monsters_front_trips"] is None
    assert Special.TWO_MONSTERS_FRONT_TRIPS not in Ruleset.from_dict(PUXIAN.to_dict()).specials


def test_r14_5_6_order_piles_scoop_horse_home_run() -> None:
    """R14.5.6, R14.1.4: A scoops D with a bonus (3 × 2 + 1), the horse doubles it, the home
    run doubles again: (3 × 2 + 1) × 2 × 2 = 28."""
    rules = resolve({"scoop_bonus": 1, "horse_card": "8c", "home_run_min_players": 3})
    three = {k: EX3[k] for k in "ABD"}
    score = score_round([seat(p, h) for p, h in three.items()], rules)
    a_d = next(p for p in score.pairs if (p.a, p.b) == ("A", "D"))
    assert a_d.points == (3 * 2 + 1) * 2 * 2
    assert a_d.home_run and a_d.scoop


def test_r14_1_2_a_holder_is_read_from_the_dealt_cards_whatever_is_played() -> None:
    """R14.1.2: arrangement, declaration and foul do not matter; nor does a missing play."""
    rules = resolve({"horse_card": "As"})
    hand_a = cards(EX1_A)
    score = score_round([Seat("A", NO_ARRANGEMENT, hand_a), seat("B", EX1_B)], rules)
    assert score.points == [-12, 12]  # B scoops A's missing arrangement: 3 × 2, × 2
    with pytest.raises(ValueError, match=r"R14\.1\.2"):
        score_round([Seat("A", NO_ARRANGEMENT), seat("B", EX1_B)], rules)


# R14.1.1, R14.6: parameters and presets ---------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"horse_card": "8x"}, "ruleset.horse_card"),
        ({"horse_multiplier": 1}, "ruleset.horse_multiplier"),
        ({"horse_multiplier": 5}, "ruleset.horse_multiplier"),
        ({"horse_both_holders": "double"}, "ruleset.horse_both_holders"),
        ({"max_players": 7}, "ruleset.max_players"),
        ({"max_players": 1}, "ruleset.max_players"),
        ({"extra_suits": ["d", "d"]}, "ruleset.extra_suits"),
        ({"extra_suits": ["d", "c", "h"]}, "ruleset.extra_suits"),
        ({"extra_suits": ["x"]}, "ruleset.extra_suits"),
        ({"group_kickers": "no"}, "ruleset.group_kickers"),
        ({"flush_pairs_first": 1}, "ruleset.flush_pairs_first"),
        ({"special_counting": "loose"}, "ruleset.special_counting"),
        ({"extra_specials": ["dragon"]}, "ruleset.extra_specials"),
        ({"roll_over_counts_as_scoop": None}, "ruleset.roll_over_counts_as_scoop"),
        ({"scoop_bonus": 4}, "ruleset.scoop_bonus"),
        ({"special_order": "name"}, "ruleset.special_order"),
    ],
)
def test_r14_1_1_each_variant_parameter_out_of_range_is_refused_naming_it(
    spec: dict[str, Any], field: str
) -> None:
    """R14 (chapter): a value outside its range is refused, naming the parameter."""
    with pytest.raises(RuleError) as refused:
        resolve(spec)
    assert refused.value.field == field
    assert field.removeprefix("ruleset.") in refused.value.message


def test_r14_6_presets_keep_standard_and_fujian_and_add_the_putian_tables() -> None:
    """R14.6: standard and fujian keep every R14 parameter at its default, and record exactly
    the parameters they recorded before R14; puxian, puxian5, puxian6 as the table says."""
    for name in ("standard", "fujian"):
        ruleset = resolve(name)
        assert ruleset.variants() == {}
        assert set(ruleset.to_dict()) == {
            "name", "wheel", "scoop_multiplier", "home_run_multiplier", "home_run_min_players",
            "foul_counts_for_home_run", "pile_bonuses", "special_points",
            "quad_counts_as_two_pairs", "seat_minimum", "stake_policy", "base_stake",
            "escape_penalty_multiple", "arrange_seconds",
        }  # fmt: skip
    p = resolve("puxian")
    assert (p.max_players, p.extra_suits, str(p.horse_card), p.horse_multiplier) == (4, "", "8h", 2)
    assert (p.horse_both_holders, p.roll_over_counts_as_scoop, p.scoop_bonus) == (
        "cancel",
        False,
        0,
    )
    assert (p.scoop_multiplier, p.home_run_multiplier, p.home_run_min_players) == (2, 2, 3)
    assert (p.special_order, p.special_counting, p.quad_counts_as_two_pairs) == (
        "points", "partition", True,
    )  # fmt: skip
    assert (p.group_kickers, p.flush_pairs_first, p.wheel) == (False, True, "second")
    assert p.points_of(Special.SUPREME_DRAGON) == 104
    assert p.points_of(Special.SIX_OF_A_KIND) == 20
    assert p.points_of(Special.TWO_FIVES_ONE_TRIPS) == 26
    assert p.pile_worth(0, Category.THREE_OF_A_KIND) == 3
    assert (resolve("puxian5").max_players, resolve("puxian5").extra_suits) == (5, "d")
    assert (resolve("puxian6").max_players, resolve("puxian6").extra_suits) == (6, "dc")
    for name in ("puxian", "puxian5", "puxian6"):
        assert resolve(name).limit_violation() is None
        assert Ruleset.from_dict(resolve(name).to_dict()) == resolve(name)


def test_r14_1_6_the_horse_card_is_recorded_with_the_ruleset() -> None:
    """R14.1.6: the horse card is public from the table's opening: it is in the ruleset."""
    assert PUXIAN.to_dict()["horse_card"] == "8h"
    assert "horse_card" not in STANDARD.to_dict()


def test_r14_a_ruleset_recorded_before_r14_reads_with_r14_s_defaults() -> None:
    """A table's ruleset as recorded before R14 (R13's parameters only) reads with every R14
    parameter at its default and records the same dict again."""
    recorded = STANDARD.to_dict() | {"scoop_multiplier": 3}
    loaded = Ruleset.from_dict(recorded)
    assert loaded.horse_card is None and loaded.max_players == 4 and loaded.extra_suits == ""
    assert loaded.to_dict() == recorded


def test_r14_3_1_suggest_uses_five_of_a_kind_and_copies() -> None:
    """R14.3.1, R5.6: the helper builds piles from copies and never fouls."""
    rules = PUXIAN5
    hand = cards("4c 4d 4d 4h 4s 6c 6d 6d 6h 6s Kc Kh 2s", rules)
    arrangement = suggest(hand, rules).arrangement
    assert sorted(arrangement.cards) == sorted(hand)
    assert arrangement.foul_reason(rules.pile_order) is None
    assert category_of(value5(arrangement.back, rules.pile_order)) is Category.FIVE_OF_A_KIND


def test_r14_2_6_a_home_run_at_six_seats_scoops_all_five_others() -> None:
    """R14.2.6, R6.7: with six players a home run needs five scoops; A's five pairs are then
    each doubled once more (15 pairs in all)."""
    import random

    rules = resolve({"max_players": 6, "extra_suits": ["d", "c"]})
    a_text = "Qc Qd Qh | Kc Kc Kd Kd Kh | Ac Ac Ad Ad Ah"
    a_cards = cards(a_text, rules)
    rest = list(rules.deck)
    for card in a_cards:
        rest.remove(card)
    random.Random(14).shuffle(rest)
    seats = [seat("A", a_text, rules)]
    for k, name in enumerate("BCDEF"):
        hand = tuple(rest[13 * k : 13 * k + 13])
        seats.append(Seat(name, Play(suggest(hand, rules).arrangement), hand))
    score = score_round(seats, rules)
    a_pairs = [p for p in score.pairs if "A" in (p.a, p.b)]
    assert len(score.pairs) == 15 and len(a_pairs) == 5
    assert all(p.home_run and p.scoop for p in a_pairs)
    assert [p.points for p in a_pairs] == [3 * 2 * 2] * 5
    assert score.players[0].points == 60
    five = rules.with_overrides({"home_run_min_players": 6})  # R14.5.5: six needed, five play
    fewer = score_round(seats[:5], five)
    assert not any(p.home_run for p in fewer.pairs)
    assert fewer.players[0].points == 4 * 3 * 2
