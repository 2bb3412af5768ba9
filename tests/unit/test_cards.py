import pytest

from domain.errors import CardError
from domain.rules.cards import DECK, Card, format_cards, parse_card, parse_cards


def test_r1_1_deck_has_52_distinct_cards_13_ranks_4_suits() -> None:
    assert len(set(DECK)) == 52
    assert {c.rank for c in DECK} == set(range(13))
    assert {c.suit for c in DECK} == set(range(4))


def test_r1_1_ranks_order_two_low_ace_high() -> None:
    assert parse_card("2c").rank < parse_card("Tc").rank < parse_card("Ac").rank


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("As", "As"),
        ("td", "Td"),
        ("10h", "Th"),
        ("10♥", "Th"),
        ("q♠", "Qs"),
        ("7C", "7c"),
        ("K♦", "Kd"),
        ("2♣", "2c"),
        ("aS", "As"),
    ],
)
def test_r1_2_input_notation_accepts_10_either_case_and_symbols(text: str, expected: str) -> None:
    assert str(parse_card(text)) == expected


@pytest.mark.parametrize("text", ["", "A", "1s", "11h", "Ax", "AAs", "10", "♠A", "Zz", "A♤"])
def test_r1_2_unknown_card_is_refused_with_its_text(text: str) -> None:
    with pytest.raises(CardError, match="unknown card"):
        parse_card(text)


def test_r1_2_output_is_always_two_letters() -> None:
    assert format_cards(parse_cards(["10♠", "j♥", "2D"])) == ["Ts", "Jh", "2d"]


def test_r1_1_a_card_twice_is_refused() -> None:
    with pytest.raises(CardError, match="As appears twice"):
        parse_cards(["As", "Kd", "as"])


def test_r1_4_canonical_deck_order_is_rank_major_suits_cdhs() -> None:
    assert format_cards(DECK[:6]) == ["2c", "2d", "2h", "2s", "3c", "3d"]
    assert format_cards(DECK[-2:]) == ["Ah", "As"]
    assert all(isinstance(c, Card) for c in DECK)
