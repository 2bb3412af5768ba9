"""Small builders shared by the unit tests."""

from __future__ import annotations

from domain.rules.arrangement import Arrangement
from domain.rules.cards import Card, parse_cards
from domain.rules.play import Play
from domain.rules.scoring import Seat


def cards(text: str) -> tuple[Card, ...]:
    return parse_cards(text.split())


def arrangement(text: str) -> Arrangement:
    """``"Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As"`` → an Arrangement."""
    front, middle, back = (cards(p) for p in text.split("|"))
    return Arrangement.of(front, middle, back)


def seat(player_id: str, text: str) -> Seat:
    return Seat(player_id, Play(arrangement(text)))
