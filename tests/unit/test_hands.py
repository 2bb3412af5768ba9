"""R2 and R3: pile categories, keys and comparisons, with exhaustive golden counts."""

import itertools
from collections import Counter

import pytest

from domain.rules.cards import DECK
from domain.rules.hands import (
    Category,
    category_of,
    describe,
    front_beats_middle,
    value3,
    value5,
)

from .helpers import cards


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("9h Th Jh Qh Kh", Category.STRAIGHT_FLUSH),
        ("Ah 2h 3h 4h 5h", Category.STRAIGHT_FLUSH),
        ("9c 9d 9h 9s 2c", Category.FOUR_OF_A_KIND),
        ("9c 9d 9h 2s 2c", Category.FULL_HOUSE),
        ("2h 6h 8h Jh Ah", Category.FLUSH),
        ("Td Jc Qh Ks Ad", Category.STRAIGHT),
        ("Ad 2c 3h 4s 5d", Category.STRAIGHT),
        ("7d 7c 7h 2s 5d", Category.THREE_OF_A_KIND),
        ("7d 7c 5h 5s Ad", Category.TWO_PAIR),
        ("7d 7c 5h 4s Ad", Category.PAIR),
        ("7d 8c 5h 4s Ad", Category.HIGH_CARD),
        ("Qd Kc Ah 2s 3d", Category.HIGH_CARD),  # no wrap-around straight
    ],
)
def test_r2_1_five_card_pile_is_exactly_one_category(text: str, category: Category) -> None:
    assert category_of(value5(cards(text))) is category


def test_r2_1_categories_are_ordered_strongest_first() -> None:
    ladder = [
        "9h Th Jh Qh Kh",
        "9c 9d 9h 9s 2c",
        "9c 9d 9h 2s 2c",
        "2h 6h 8h Jh Ah",
        "Td Jc Qh Ks Ad",
        "7d 7c 7h 2s 5d",
        "7d 7c 5h 5s Ad",
        "7d 7c 5h 4s Ad",
        "7d 8c 5h 4s Ad",
    ]
    values = [value5(cards(t)) for t in ladder]
    assert values == sorted(values, reverse=True)


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Qh Qd Qc", Category.THREE_OF_A_KIND),
        ("Qh Qd 3c", Category.PAIR),
        ("2h 3h 4h", Category.HIGH_CARD),
        ("Jh Qh Kh", Category.HIGH_CARD),
    ],
)
def test_r2_2_front_is_only_trips_pair_or_high_card(text: str, category: Category) -> None:
    assert category_of(value3(cards(text))) is category


def test_r2_2_suited_consecutive_front_is_no_better_than_high_card() -> None:
    assert value3(cards("Jh Qh Kh")) == value3(cards("Jc Qd Ks"))
    assert value3(cards("Jh Qh Kh")) < value3(cards("2c 2d 3s"))


def test_r2_3_broadway_is_highest_wheel_second_by_default() -> None:
    broadway, wheel, king_high = (
        value5(cards(t)) for t in ("Td Jc Qh Ks Ad", "Ad 2c 3h 4s 5d", "9d Tc Jh Qs Kd")
    )
    assert broadway > wheel > king_high


def test_r2_3_wheel_lowest_when_the_ruleset_says_so() -> None:
    wheel = value5(cards("Ad 2c 3h 4s 5d"), "lowest")
    six_high = value5(cards("2d 3c 4h 5s 6d"), "lowest")
    assert wheel < six_high
    assert value5(cards("Ad 2d 3d 4d 5d"), "lowest") < value5(cards("2h 3h 4h 5h 6h"), "lowest")


def test_r2_3_straight_flushes_follow_the_straight_order() -> None:
    assert value5(cards("Ah 2h 3h 4h 5h")) > value5(cards("9h Th Jh Qh Kh"))
    assert value5(cards("Th Jh Qh Kh Ah")) > value5(cards("Ah 2h 3h 4h 5h"))


@pytest.mark.parametrize(
    ("stronger", "weaker"),
    [
        ("9c 9d 9h 9s 2c", "8c 8d 8h 8s Ac"),  # quad rank first
        ("9c 9d 9h 9s 3c", "9c 9d 9h 9s 2c"),  # then kicker (impossible in one deck, fine here)
        ("9c 9d 9h 2s 2c", "8c 8d 8h As Ac"),  # full house: trips first
        ("2h 6h 8h Jh Ah", "3d 6d 8d Jd Kd"),  # flush: highest card first (the seed)
        ("2h 6h 9h Jh Ah", "3d 6d 8d Jd Ad"),  # then the next
        ("7d 7c 7h 3s 2d", "6d 6c 6h As Kd"),  # trips rank first
        ("7d 7c 5h 5s 2d", "7h 7s 4h 4c Ad"),  # two pair: high pair, low pair
        ("7d 7c 5h 5s 3d", "7h 7s 5d 5c 2h"),  # then kicker
        ("8d 8c 5h 4s 2d", "7h 7s Ad Kc Qh"),  # pair rank first
        ("8d 8c Ah 4s 3d", "8h 8s Kd Qc Jh"),  # then kickers high to low
        ("Ad Kc 9h 4s 3d", "Ah Kd 9s 4c 2h"),  # high card: all ranks
    ],
)
def test_r2_3_within_a_category_piles_compare_by_key(stronger: str, weaker: str) -> None:
    assert value5(cards(stronger)) > value5(cards(weaker))


def test_r2_4_and_r1_3_equal_ranks_tie_whatever_the_suits() -> None:
    assert value5(cards("2s 6s 8s Js As")) == value5(cards("2h 6h 8h Jh Ah"))
    assert value5(cards("Td Jc Qh Ks Ad")) == value5(cards("Th Jd Qs Kc Ac"))
    assert value3(cards("Kh 7d 4c")) == value3(cards("Ks 7h 4d"))


@pytest.mark.parametrize(
    ("front", "middle", "front_wins"),
    [
        ("Kh Kd Ac", "Ks Kc As 7d 3h", False),  # (pair,K,A) equals (pair,K,A,7,3)
        ("Kh Kd Ac", "Ks Kc Qs 7d 3h", True),
        ("Ah Kd 2c", "As Kc 3s 7d 4h", False),  # (high,A,K,2) below (high,A,K,7,...)
        ("Ah Kd 8c", "As Kc 7s 3d 2h", True),
        ("3d 3s 3c", "2h 2s 4s 7s 9h", True),  # trips beat a pair
        ("3d 3s 3c", "2h 2s 4s 4c 9h", True),  # trips beat two pair (R2.1)
        ("3d 3s 3c", "2h 2s 2d 4c 9h", True),  # trips 3 beat trips 2
        ("3d 3s 3c", "4h 4s 4d 2c 9h", False),
        ("Ad Ah Ac", "2h 3h 4h 5h 7h", False),  # a flush beats any front
        ("Ad Ah Ac", "2h 3s 4h 5h 6h", False),  # so does a straight
        ("Qh Qd 3c", "Qs Qc 3s 2d 4h", False),  # (pair,Q,3) vs (pair,Q,4,...)
        ("Qh Qd 5c", "Qs Qc 4s 3d 2h", True),
    ],
)
def test_r3_front_against_middle_compares_over_the_fronts_length(
    front: str, middle: str, front_wins: bool
) -> None:
    assert front_beats_middle(value3(cards(front)), value5(cards(middle))) is front_wins


def test_describe_names_category_and_deciding_ranks() -> None:
    assert describe(value5(cards("2s 6s 8s Js As"))) == "flush, A-high"
    assert describe(value5(cards("3d 4d 5c 6d 7h"))) == "straight, 7-high"
    assert describe(value5(cards("Ad 2c 3h 4s 5d"))) == "straight, 5-high (wheel)"
    assert describe(value5(cards("9c 9d 9h 5s 5c"))) == "full house, 9s over 5s"
    assert describe(value3(cards("Qh Qd 3c"))) == "pair, Qs"


GOLDEN_FIVE = {
    Category.STRAIGHT_FLUSH: (40, 10),
    Category.FOUR_OF_A_KIND: (624, 156),
    Category.FULL_HOUSE: (3_744, 156),
    Category.FLUSH: (5_108, 1_277),
    Category.STRAIGHT: (10_200, 10),
    Category.THREE_OF_A_KIND: (54_912, 858),
    Category.TWO_PAIR: (123_552, 858),
    Category.PAIR: (1_098_240, 2_860),
    Category.HIGH_CARD: (1_302_540, 1_277),
}


@pytest.mark.slow
@pytest.mark.parametrize("wheel", ["second", "lowest"])
def test_r2_golden_counts_over_all_c52_5_hands(wheel: str) -> None:
    counts: Counter[Category] = Counter()
    values: dict[Category, set[int]] = {c: set() for c in Category}
    for hand in itertools.combinations(DECK, 5):
        value = value5(hand, wheel)
        category = category_of(value)
        counts[category] += 1
        values[category].add(value)
    assert sum(counts.values()) == 2_598_960
    for category, (hands, distinct) in GOLDEN_FIVE.items():
        assert (counts[category], len(values[category])) == (hands, distinct), category


def test_r2_2_golden_counts_over_all_c52_3_fronts() -> None:
    counts: Counter[Category] = Counter()
    values: dict[Category, set[int]] = {c: set() for c in Category}
    for hand in itertools.combinations(DECK, 3):
        value = value3(hand)
        counts[category_of(value)] += 1
        values[category_of(value)].add(value)
    assert counts == {
        Category.THREE_OF_A_KIND: 52,
        Category.PAIR: 3_744,
        Category.HIGH_CARD: 18_304,
    }
    assert {c: len(v) for c, v in values.items() if v} == {
        Category.THREE_OF_A_KIND: 13,
        Category.PAIR: 156,
        Category.HIGH_CARD: 286,
    }


def test_describe_against_adds_the_kickers_only_when_the_short_words_tie() -> None:
    from domain.rules.hands import describe_against

    j94, j87 = value3(cards("Jh 9d 4c")), value3(cards("Js 8h 7c"))
    assert describe_against(j94, j87, front=True) == "high card, J-high (J 9 4)"
    pair_a, pair_k = value5(cards("2h 2d Ac 9s 3d")), value5(cards("2s 2c Kc Qs Jd"))
    assert describe_against(pair_a, pair_k) == "pair, 2s (2 A 9 3)"
    flush, straight = value5(cards("2s 6s 8s Js As")), value5(cards("3d 4d 5c 6d 7h"))
    assert describe_against(flush, straight) == "flush, A-high"


@pytest.mark.parametrize("wheel", ["second", "lowest"])
def test_r2_3_each_wheel_s_table_is_every_pile_classified_under_that_wheel(wheel: str) -> None:
    """The table a pile order is valued by, built on first use and kept, is every pile
    classified under that wheel."""
    from domain.rules import hands

    kept = hands._tables_of(wheel)
    assert hands._TABLES[wheel] is kept
    assert kept == hands._tables(wheel)
