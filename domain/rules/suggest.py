"""Help for a player: which specials the cards qualify for, and a good arrangement (R5.6).

>>> from domain.rules.cards import parse_cards
>>> from domain.rules.ruleset import STANDARD
>>> s = suggest(parse_cards("Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd".split()), STANDARD)
>>> [str(c) for c in s.arrangement.back], s.arrangement.foul_reason()
(['Kd', 'Qd', 'Jd', 'Td', '5d'], None)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

from domain.rules.arrangement import Arrangement
from domain.rules.cards import Card, by_strength
from domain.rules.hands import value3, value5
from domain.rules.play import strongest_first
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Qualification, five_card_subsets, qualifying


@dataclass(frozen=True)
class Suggestion:
    specials: tuple[Qualification, ...]
    arrangement: Arrangement


def suggest(cards: Sequence[Card], ruleset: Ruleset) -> Suggestion:
    """The specials the cards qualify for under the ruleset (strongest first, R14.4, R14.5.4;
    declaring stays the player's choice, R5.6) and a non-foul arrangement (five_of_a_kind
    included, R14.3.1): the strongest back, then the strongest middle of
    what is left, the rest in front — never a foul, since every pile is the best of a set that
    contains the next pile's cards (R4.2, R3). Among equally strong backs the one leaving the
    strongest middle and front wins."""
    cards = by_strength(cards)
    wheel = ruleset.pile_order  # R2.3, R14.3.3, R14.3.4
    subsets = five_card_subsets(cards, wheel)
    found = qualifying(cards, counting=ruleset.counting, specials=ruleset.specials, subsets=subsets)
    found = strongest_first(found, ruleset)  # R14.5.3
    best: tuple[tuple[int, int, int], Arrangement] | None = None
    for mask, back, _ in subsets:
        # by position, so that two copies of a card are two cards (R14.2.3)
        rest = [c for k, c in enumerate(cards) if not mask >> k & 1]
        picks = max(combinations(range(8), 5), key=lambda m: value5([rest[k] for k in m], wheel))
        strongest = tuple(rest[k] for k in picks)
        if best is not None and value5(back, wheel) < best[0][0]:
            break
        front = tuple(c for k, c in enumerate(rest) if k not in picks)
        key = (value5(back, wheel), value5(strongest, wheel), value3(front))
        if best is None or key > best[0]:
            best = (key, Arrangement(front, strongest, back))
    assert best is not None
    return Suggestion(tuple(found), best[1])
