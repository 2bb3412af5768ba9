"""Arranging thirteen cards into front, middle and back, and the foul rule (R4).

>>> from domain.rules.cards import parse_cards
>>> a = Arrangement.of(parse_cards("3d 3s 3c".split()), parse_cards("2h 2s 4s 7s 9h".split()),
...                    parse_cards("Th Jc Qc Kc Ac".split()))
>>> a.foul_reason()
'front (three of a kind, 3s) beats middle (pair, 2s)'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from domain.errors import ArrangementError
from domain.rules.cards import Card
from domain.rules.hands import Wheel, describe, front_beats_middle, value3, value5
from domain.rules.specials import Split

PILE_NAMES = ("front", "middle", "back")
PILE_SIZES = (3, 5, 5)


@dataclass(frozen=True)
class Arrangement(Split):
    """R4.1: three cards in front, five in the middle, five at the back, checked."""

    @classmethod
    def of(
        cls,
        front: Sequence[Card],
        middle: Sequence[Card],
        back: Sequence[Card],
        *,
        dealt: Sequence[Card] | None = None,
    ) -> Arrangement:
        """An arrangement checked against R4.1; ``dealt`` are the player's thirteen cards."""
        piles = (tuple(front), tuple(middle), tuple(back))
        for name, pile, size in zip(PILE_NAMES, piles, PILE_SIZES, strict=True):
            if len(pile) != size:
                raise ArrangementError(
                    f"the {name} needs {size} cards, got {len(pile)}", field=name
                )
        # R4.1 as a multiset (R14.2.3): a card may be placed as often as it was dealt, so a
        # card with a copy in the deck and in the hand may be placed twice, and no more.
        held = Counter(dealt) if dealt is not None else None
        seen: Counter[Card] = Counter()
        for name, pile in zip(PILE_NAMES, piles, strict=True):
            for card in pile:
                seen[card] += 1
                if held is None:
                    if seen[card] > 1:
                        raise ArrangementError(f"card {card} is used twice", field=name)
                elif seen[card] > held[card]:
                    if held[card] == 0:
                        raise ArrangementError(
                            f"card {card} in the {name} was not dealt to this player", field=name
                        )
                    used = "twice" if seen[card] == 2 else f"{seen[card]} times"
                    more = f" but was dealt {held[card]} times" if held[card] > 1 else ""
                    raise ArrangementError(f"card {card} is used {used}{more}", field=name)
        return cls(*piles)

    def values(self, wheel: Wheel = "second") -> tuple[int, int, int]:
        """The three pile values (R2), front first."""
        return value3(self.front), value5(self.middle, wheel), value5(self.back, wheel)

    def foul_reason(self, wheel: Wheel = "second") -> str | None:
        """R4.2: why this arrangement is a foul, or None. Equal piles are allowed; a five of a
        kind (R14.3.1) takes part like any category."""
        front, middle, back = self.values(wheel)
        return foul_reason(front, middle, back)


def foul_reason(front: int, middle: int, back: int) -> str | None:
    """R4.2 with R3 for the front against the middle."""
    if front_beats_middle(front, middle):
        return f"front ({describe(front)}) beats middle ({describe(middle)})"
    if middle > back:
        return f"middle ({describe(middle)}) beats back ({describe(back)})"
    return None
