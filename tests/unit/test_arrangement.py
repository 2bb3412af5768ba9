"""R4: arrangements and the foul rule."""

import pytest

from domain.errors import ArrangementError
from domain.rules.arrangement import Arrangement

from .helpers import arrangement, cards

DEALT = cards("Qh Qd 3c 9s 9c 5d 5h Kc 2s 6s 8s Js As")


def test_r4_1_arrangement_uses_exactly_the_dealt_cards() -> None:
    a = Arrangement.of(
        cards("Qh Qd 3c"), cards("9s 9c 5d 5h Kc"), cards("2s 6s 8s Js As"), dealt=DEALT
    )
    assert sorted(a.cards) == sorted(DEALT)


@pytest.mark.parametrize(
    ("front", "middle", "back", "message"),
    [
        ("Qh Qd", "9s 9c 5d 5h Kc 3c", "2s 6s 8s Js As", "front needs 3 cards, got 2"),
        ("Qh Qd 3c", "9s 9c 5d 5h", "Kc 2s 6s 8s Js As", "middle needs 5 cards, got 4"),
        ("Qh Qd 3c", "9s 9c 5d 5h Kc", "2s 6s 8s Js", "back needs 5 cards, got 4"),
        ("Qh Qd 3c", "9s 9c 5d 5h Kc", "2s 6s 8s Js Ah", "Ah in the back was not dealt"),
        ("Qh Qd 3c", "9s 9c 5d 5h Kc", "2s 6s 8s Js Qh", "Qh is used twice"),
    ],
)
def test_r4_1_wrong_sizes_foreign_or_repeated_cards_are_refused(
    front: str, middle: str, back: str, message: str
) -> None:
    with pytest.raises(ArrangementError, match=message):
        Arrangement.of(cards(front), cards(middle), cards(back), dealt=DEALT)


def test_r4_2_middle_beating_back_is_a_foul() -> None:
    a = arrangement("Qh Qd 3c | 2s 6s 8s Js As | 9s 9c 5d 5h Kc")
    assert a.foul_reason() == "middle (flush, A-high) beats back (two pair, 9s and 5s)"


def test_r4_2_front_beating_middle_is_a_foul_by_r3() -> None:
    a = arrangement("3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac")
    assert a.foul_reason() == "front (three of a kind, 3s) beats middle (pair, 2s)"


def test_r4_2_equal_piles_are_allowed() -> None:
    # back == middle by value (same ranks, suits do not count) and front == middle by R3
    b = arrangement("Kh Kd Ad | Ks Kc As 7d 3h | 2h 6h 8h Jh Ah")
    assert b.foul_reason() is None
    c = arrangement("2c 3d 5h | 7s 8c 9d Jh Kc | 7h 8d 9s Js Kd")
    assert c.foul_reason() is None


def test_r4_2_normal_arrangements_are_not_fouls() -> None:
    assert arrangement("Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As").foul_reason() is None
