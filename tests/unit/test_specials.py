"""R5: the fourteen special hands, their order, declarations and splits."""

import pytest

from domain.errors import DeclarationRefused, SpecialError
from domain.rules.play import declare
from domain.rules.ruleset import STANDARD
from domain.rules.specials import (
    BASE_SPECIALS,
    Special,
    Split,
    qualifies,
    qualifying,
    split_qualifies,
)

from .helpers import cards

# One hand per special that qualifies for it (and possibly weaker ones).
EXAMPLES = {
    Special.SUPREME_DRAGON: "2h 3h 4h 5h 6h 7h 8h 9h Th Jh Qh Kh Ah",
    Special.DRAGON: "2h 3c 4h 5h 6h 7h 8h 9h Th Jh Qh Kh Ah",
    Special.TWELVE_ROYALS: "Jc Jd Jh Qc Qd Qh Qs Kc Kd Kh Ac Ad Ah",
    Special.THREE_STRAIGHT_FLUSHES: "Qh Kh Ah 2c 3c 4c 5c 6c 9d Td Jd Qd Kd",
    Special.THREE_QUADS: "2c 2d 2h 2s 7c 7d 7h 7s Jc Jd Jh Js 4d",
    Special.ALL_BIG: "8c 8d 9h Ts Jc Qd Kh Ac Ad 9c Tc Jd Qs",
    Special.ALL_SMALL: "2c 2d 3h 4s 5c 6d 7h 8c 8d 3c 4c 5d 6s",
    Special.ONE_COLOR: "2c 4s 6c 8s Tc Qs Ac 3s 5c 7s 9c Js Kc",
    Special.TWO_MONSTERS_FRONT_TRIPS: "Ac Ad Ah 9c 9d 9h 9s 2c 3c 4c 5c 6c Kd",
    Special.FOUR_TRIPS: "2c 2d 2h 5c 5d 5h 9c 9d 9h Kc Kd Kh Ad",
    Special.FIVE_PAIRS_TRIPS: "2c 2d 5c 5d 9c 9d Jh Js Kc Kd Ac Ad Ah",
    Special.SIX_PAIRS: "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As",
    Special.THREE_STRAIGHTS: "Ah 2c 3d 4s 5h 6c 7d 8s 9h Tc Jd Qs Kh",
    Special.THREE_FLUSHES: "Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Th",
}


def test_r5_1_the_table_lists_fourteen_specials_strongest_first_with_points() -> None:
    assert [s.order for s in BASE_SPECIALS] == list(range(1, 15))
    assert [s.default_points for s in BASE_SPECIALS] == [
        108,
        36,
        24,
        20,
        20,
        10,
        10,
        10,
        6,
        6,
        5,
        4,
        4,
        3,
    ]


@pytest.mark.parametrize("special", BASE_SPECIALS, ids=lambda s: s.id)
def test_r5_1_each_special_is_recognised(special: Special) -> None:
    hand = cards(EXAMPLES[special])
    assert qualifies(special, hand) is not None
    assert special in [q.special for q in qualifying(hand)]


@pytest.mark.parametrize(
    ("special", "text"),
    [
        (Special.SUPREME_DRAGON, "2h 3c 4h 5h 6h 7h 8h 9h Th Jh Qh Kh Ah"),
        (Special.DRAGON, "2h 2c 4h 5h 6h 7h 8h 9h Th Jh Qh Kh Ah"),
        (Special.TWELVE_ROYALS, "Tc Jd Jh Qc Qd Qh Qs Kc Kd Kh Ac Ad Ah"),
        (Special.THREE_QUADS, "2c 2d 2h 2s 7c 7d 7h 7s Jc Jd Jh 3s 4d"),
        (Special.ALL_BIG, "7c 8d 9h Ts Jc Qd Kh Ac Ad 9c Tc Jd Qs"),
        (Special.ALL_SMALL, "2c 2d 3h 4s 5c 6d 7h 8c 9d 3c 4c 5d 6s"),
        (Special.ONE_COLOR, "2c 4s 6c 8s Tc Qs Ac 3s 5c 7s 9c Js Kh"),
        (Special.FOUR_TRIPS, "2c 2d 2h 5c 5d 5h 9c 9d 9h Kc Kd Qh Ad"),
        (Special.FIVE_PAIRS_TRIPS, "2c 2d 5c 5d 9c 9d Jh Js Kc Qd Ac Ad Ah"),
        (Special.SIX_PAIRS, "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Js As"),
        (Special.THREE_STRAIGHTS, "Ah 2c 3d 4s 5h 6c 7d 8s 9h Tc Jd Qs Qh"),
        (Special.THREE_FLUSHES, "Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Td"),
        (Special.THREE_STRAIGHT_FLUSHES, "Qh Kh Ah 2c 3c 4c 5c 6c 9d Td Jd Qd Kc"),
        (Special.TWO_MONSTERS_FRONT_TRIPS, "Ac Ad Ah 9c 9d 9h 8s 2c 3c 4c 5c 6c Kd"),
    ],
)
def test_r5_1_near_misses_do_not_qualify(special: Special, text: str) -> None:
    assert qualifies(special, cards(text)) is None


def test_r5_1_row_12_a_four_of_a_kind_is_not_two_pairs_unless_the_ruleset_says_so() -> None:
    hand = cards("2c 2d 2h 2s 3h 3d 4h 4d 6d 6h 8s 8h As")
    assert qualifies(Special.SIX_PAIRS, hand) is None
    assert qualifies(Special.SIX_PAIRS, hand, quad_counts_as_two_pairs=True) is not None


def test_r5_1_six_pairs_holds_a_trips_as_a_pair_and_the_single() -> None:
    hand = cards("2c 2d 5c 5d 9c 9d Jh Js Kc Kd Ac Ad Ah")
    assert [q.special for q in qualifying(hand)][:2] == [
        Special.FIVE_PAIRS_TRIPS,
        Special.SIX_PAIRS,
    ]


def test_r5_1_all_big_and_all_small_share_the_eights() -> None:
    assert qualifies(Special.ALL_BIG, cards("8c 8d 8h 8s 9c 9d 9h Tc Td Th Jc Jd Jh"))
    assert qualifies(Special.ALL_SMALL, cards("8c 8d 8h 8s 7c 7d 7h 6c 6d 6h 5c 5d 5h"))


def test_r5_2_order_decides_between_equal_points() -> None:
    assert Special.ALL_BIG.beats(Special.ALL_SMALL)
    assert Special.ALL_SMALL.beats(Special.ONE_COLOR)
    assert Special.THREE_STRAIGHT_FLUSHES.beats(Special.THREE_QUADS)
    assert not Special.SIX_PAIRS.beats(Special.SIX_PAIRS)


@pytest.mark.parametrize(
    ("special", "front"),
    [(Special.THREE_STRAIGHTS, "Ah 2c 3d"), (Special.THREE_STRAIGHTS, "Qh Kc Ad")],
)
def test_r5_3_three_card_runs_include_a23_and_qka(special: Special, front: str) -> None:
    rest = cards("4s 5h 6c 7d 8s 9h Tc Jd Qs Kh")
    split = Split(cards(front), rest[:5], rest[5:])
    assert split_qualifies(special, split)


def test_r5_3_k_a_2_is_not_a_run() -> None:
    split = Split(cards("Kh Ac 2d"), cards("3s 4h 5c 6d 7s"), cards("8h 9c Td Js Qh"))
    assert not split_qualifies(Special.THREE_STRAIGHTS, split)


def test_r5_4_declaring_any_takes_the_strongest_qualifying_special() -> None:
    play = declare(cards(EXAMPLES[Special.SUPREME_DRAGON]), "any", STANDARD)
    assert play.special is Special.SUPREME_DRAGON


def test_r5_4_a_declaration_the_cards_do_not_support_is_refused() -> None:
    with pytest.raises(SpecialError, match="do not qualify for dragon"):
        declare(cards(EXAMPLES[Special.SIX_PAIRS]), "dragon", STANDARD)
    with pytest.raises(SpecialError, match="qualify for no special"):
        declare(cards("2c 2d 5h 7s 8c 9d Jh Kc 4h 6s Td Qs Ac"), "any", STANDARD)
    with pytest.raises(SpecialError, match="unknown special 'seven_pairs'"):
        declare(cards(EXAMPLES[Special.SIX_PAIRS]), "seven_pairs", STANDARD)


def test_r5_5_split_patterns_record_a_qualifying_split_found_by_the_service() -> None:
    play = declare(cards(EXAMPLES[Special.THREE_FLUSHES]), "three_flushes", STANDARD)
    assert play.split is not None
    assert split_qualifies(Special.THREE_FLUSHES, play.split)
    assert sorted(play.split.cards) == sorted(cards(EXAMPLES[Special.THREE_FLUSHES]))


def test_r5_5_a_given_split_must_show_the_pattern_and_the_foul_rule_does_not_apply() -> None:
    # front flush-trio of spades Q-J-5 "beats" nothing here, but a back weaker than the middle
    # would be a foul in a normal hand: allowed for a special split.
    good = Split(cards("Js Qs 5s"), cards("Jh Qh Ah 7h Th"), cards("2s 3s 4s 6s 7s"))
    play = declare(good.cards, "three_flushes", STANDARD, good)
    assert play.split == good
    bad = Split(cards("Js Qs Th"), cards("Jh Qh Ah 7h 5s"), cards("2s 3s 4s 6s 7s"))
    with pytest.raises(SpecialError, match="does not show three_flushes"):
        declare(bad.cards, "three_flushes", STANDARD, bad)


def test_r5_6_the_service_lists_every_qualifying_special() -> None:
    hand = cards(EXAMPLES[Special.SUPREME_DRAGON])
    assert [q.special.id for q in qualifying(hand)] == [
        "supreme_dragon",
        "dragon",
        "three_straight_flushes",
        "one_color",
        "three_straights",
        "three_flushes",
    ]


def test_r5_5_declaring_any_with_piles_judges_split_patterns_on_those_piles() -> None:
    # These cards hold three_flushes, but the given piles do not show it.
    hand = cards("2s 5s 3h 9s 6h 8h Jh Kh 4d 7d Td Qd 2d")
    bad = Split(hand[:3], hand[3:8], hand[8:])
    with pytest.raises(DeclarationRefused, match="judged on the given piles"):
        declare(bad.cards, "any", STANDARD, bad)
    good = Split(cards("2s 5s 9s"), cards("3h 6h 8h Jh Kh"), cards("4d 7d Td Qd 2d"))
    assert declare(good.cards, "any", STANDARD, good).split == good


def test_r5_5_declaring_any_without_piles_records_the_split_the_service_found() -> None:
    hand = cards(EXAMPLES[Special.THREE_FLUSHES])
    play = declare(hand, "any", STANDARD)
    assert play.special is Special.THREE_FLUSHES
    assert play.split is not None and split_qualifies(Special.THREE_FLUSHES, play.split)
