"""The demo's narration on a terminal: cards for people, red suits and bold headings in colour."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from domain.rules.cards import by_strength, format_cards, parse_card

RED_SUITS = frozenset("♥♦")


@dataclass
class Screen:
    """Where the narration goes; on a colour terminal headings are bold and red suits red."""

    out: TextIO
    colour: bool = False

    def line(self, text: str = "", indent: int = 0) -> None:
        self.out.write(" " * indent + text + "\n")

    def heading(self, text: str) -> None:
        self.line()
        self.line(f"\033[1m{text}\033[0m" if self.colour else text)

    def cards(self, cards: Sequence[str]) -> str:
        """Two-letter cards (R1.2) for people, in the given order: ``A♠ K♥`` (as the service
        dealt them: a card may appear twice with extra suits, R14.2.3)."""
        symbols = [parse_card(card).symbol() for card in cards]
        if self.colour:
            symbols = [f"\033[31m{s}\033[0m" if s[-1] in RED_SUITS else s for s in symbols]
        return " ".join(symbols)

    def hand(self, cards: Sequence[str]) -> str:
        """Cards highest rank first."""
        return self.cards(format_cards(by_strength([parse_card(card) for card in cards])))

    def piles(self, piles: Any) -> str:
        """``front | middle | back`` of a message with those three fields."""
        return " | ".join(self.cards(list(getattr(piles, p))) for p in ("front", "middle", "back"))


def wants_colour(out: TextIO) -> bool:
    return out.isatty() and "NO_COLOR" not in os.environ


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
