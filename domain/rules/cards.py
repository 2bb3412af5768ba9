"""Cards and their notation (R1), and the deck with extra suits (R14.2.3).

A card is an ``int`` 0–51 in the canonical deck order of R1.4 (rank-major, suits c d h s), so it
indexes lookup tables directly and sorts in deck order:

>>> parse_card("As"), parse_card("10♥"), parse_card("2c")
(As, Th, 2c)
>>> int(parse_card("2d")), int(parse_card("As"))
(1, 51)
>>> format_cards(parse_cards(["qh", "QD", "3♣"]))
['Qh', 'Qd', '3c']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from domain.errors import CardError, quoted

RANKS = "23456789TJQKA"
"""R1.1: ranks low to high; a card's rank is its index here (2 → 0, A → 12)."""
SUITS = "cdhs"
"""R1.4: the suit order of the canonical deck."""
SUIT_SYMBOLS = {"♣": "c", "♦": "d", "♥": "h", "♠": "s"}
SYMBOL_OF_SUIT = {v: k for k, v in SUIT_SYMBOLS.items()}
RED_SUITS = frozenset({SUITS.index("d"), SUITS.index("h")})
_TEXTS = tuple(rank + suit for rank in RANKS for suit in SUITS)
"""R1.2: each card's two-letter text, by the card (rank-major, as R1.4 orders the deck)."""


class Card(int):
    """One of the 52 cards (R1.1); ``rank`` 0–12 (2…A), ``suit`` 0–3 (c d h s). Two copies of a
    card (extra suits, R14.2.3) are the same ``Card``: same text, rank and suit, no order."""

    __slots__ = ()

    @property
    def rank(self) -> int:
        return self >> 2

    @property
    def suit(self) -> int:
        return self & 3

    @property
    def is_red(self) -> bool:
        return self.suit in RED_SUITS

    def __str__(self) -> str:
        return _TEXTS[self]

    __repr__ = __str__

    def __copy__(self) -> Card:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> Card:
        return self  # immutable, like the int it is (copy only treats exact ints so)

    def symbol(self) -> str:
        """The card with its suit symbol, for people: ``A♠``."""
        return RANKS[self >> 2] + SYMBOL_OF_SUIT[SUITS[self & 3]]


DECK: tuple[Card, ...] = tuple(Card(i) for i in range(52))
"""R1.4: the canonical deck, ``2c 2d 2h 2s 3c … As``."""

_CANONICAL: dict[str, Card] = {str(card): card for card in DECK}


def parse_card(text: str) -> Card:
    """R1.2: ``As``, ``td``, ``10h``, ``Q♠`` — rank then suit, either case."""
    card = _CANONICAL.get(text) if isinstance(text, str) else None
    if card is not None:
        return card
    if isinstance(text, str) and len(text.strip()) >= 2:
        stripped = text.strip()
        rank, suit = stripped[:-1].upper(), stripped[-1]
        rank = "T" if rank == "10" else rank
        card = _CANONICAL.get(rank + SUIT_SYMBOLS.get(suit, suit.lower()))
    if card is None:
        raise CardError(
            f"unknown card {quoted(text)}: write rank then suit, e.g. 'As', 'Td', '10h', 'Q♠'"
        )
    return card


def parse_cards(
    texts: Iterable[str], *, what: str = "hand", copies: int | Mapping[Card, int] = 1
) -> tuple[Card, ...]:
    """Parse several cards, refusing a card given more often than the deck holds it: once
    (R1.1: one deck), or as ``copies`` says, a number for every card or one per card (R14.2.3,
    ``deck_copies``).

    >>> parse_cards(["4d", "4d"], copies=deck_copies("d"))
    (4d, 4d)
    >>> parse_cards(["4d", "4d"])
    Traceback (most recent call last):
    ...
    domain.errors.CardError: card 4d appears twice in the hand
    """
    cards = tuple(parse_card(t) for t in texts)
    held = too_many(cards, copies)
    if held is not None:
        card, count = held
        times = "twice" if count == 2 else f"{count} times"
        raise CardError(f"card {card} appears {times} in the {what}")
    return cards


def too_many(cards: Iterable[Card], copies: int | Mapping[Card, int]) -> tuple[Card, int] | None:
    """R4.1 as a multiset (R14.2.3): the first card held more often than the deck holds it, with
    how often, or None."""
    seen: Counter[Card] = Counter()
    for card in cards:
        seen[card] += 1
        allowed = copies if isinstance(copies, int) else copies.get(card, 0)
        if seen[card] > allowed:
            return card, seen[card]
    return None


def deck_of(extra_suits: str = "") -> tuple[Card, ...]:
    """R14.2.3: R1.4's 52 cards, then for each extra suit in order its 13 cards 2 … A.

    >>> len(deck_of("dc")), " ".join(map(str, deck_of("d")[52:55]))
    (78, '2d 3d 4d')
    """
    extra = [Card(rank * 4 + SUITS.index(suit)) for suit in extra_suits for rank in range(13)]
    return DECK + tuple(extra)


def deck_copies(extra_suits: str = "") -> dict[Card, int]:
    """R14.2.3: how many copies of each card the deck of ``deck_of(extra_suits)`` holds."""
    return dict(Counter(deck_of(extra_suits)))


def format_cards(cards: Iterable[Card]) -> list[str]:
    """R1.2: output always uses the two-letter form."""
    return [_TEXTS[c] for c in cards]


def by_strength(cards: Sequence[Card]) -> tuple[Card, ...]:
    """Cards highest first (rank, then suit for a stable display order only, R1.3)."""
    return tuple(sorted(cards, reverse=True))
