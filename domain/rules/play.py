"""What a player brings to the showdown: an arrangement, a declared special, or nothing.

Declarations follow R5.4 (named or ``any``; unsupported ones are refused) and R5.5 (split
patterns carry a qualifying split); a ruleset's specials are those R14.5.4 and R14.4.3 give it,
and its cards a multiset of its deck (R14.2.3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from domain.errors import DeclarationRefused, SpecialError
from domain.rules.arrangement import Arrangement
from domain.rules.cards import Card, parse_cards, too_many
from domain.rules.ruleset import Ruleset
from domain.rules.specials import (
    ANY,
    Qualification,
    Special,
    Split,
    qualifies,
    qualifying,
    split_qualifies,
)


@dataclass(frozen=True)
class Play:
    """One player's showdown entry; with neither field set the player has no arrangement."""

    arrangement: Arrangement | None = None
    special: Special | None = None
    split: Split | None = None

    @property
    def is_special(self) -> bool:
        return self.special is not None


NO_ARRANGEMENT = Play()
"""R4.3: a player who never arranged is foul at the showdown."""


def strongest_first(found: Sequence[Qualification], ruleset: Ruleset) -> list[Qualification]:
    """The specials found (in R5.2's order), strongest first: as found under ``special_order =
    table``; under ``points`` (R14.5.3, where the special worth more wins) the ones worth more
    first, the table's order deciding between equal points."""
    if ruleset.special_order == "points":
        return sorted(found, key=lambda q: -ruleset.points_of(q.special))
    return list(found)


def strongest(found: Sequence[Qualification], ruleset: Ruleset) -> Qualification:
    """R5.4's ``any``: the strongest of the specials found (``strongest_first``)."""
    return strongest_first(found, ruleset)[0]


def declare(
    cards: Sequence[Card], declared: str, ruleset: Ruleset, split: Split | None = None
) -> Play:
    """R5.4: declare a named special or ``any``; refused when the cards do not support it.

    A given ``split`` must use exactly these cards and, for a split pattern, show it (R5.5);
    without one the service finds a qualifying split.
    """
    if len(cards) != 13 or too_many(cards, ruleset.copies) is not None:
        raise SpecialError(
            "a special hand needs 13 cards, none more often than the deck holds it",
            field="cards",
        )
    counting = ruleset.counting
    if split is not None and sorted(split.cards) != sorted(cards):
        raise SpecialError("the split does not use exactly the player's 13 cards", field="cards")
    if declared == ANY:
        found = qualifying(cards, counting=counting, specials=ruleset.specials)
        if split is not None:  # a given split speaks for the split patterns (R5.5)
            found = [
                q for q in found if not q.special.is_split or split_qualifies(q.special, split)
            ]
        if not found:
            raise DeclarationRefused(
                "declared 'any' but the cards qualify for no special hand"
                + (" (split patterns judged on the given piles)" if split is not None else ""),
                field="special",
            )
        best = strongest(found, ruleset)
        given = split is not None and best.special.is_split
        return Play(special=best.special, split=split if given else best.split)
    special = Special.from_id(declared)
    if special not in ruleset.specials:  # R14.5.4, R14.4.3
        raise DeclarationRefused(
            f"{special.id} ({special.chinese}) cannot be declared under ruleset {ruleset.name}",
            field="special",
        )
    if split is not None and special.is_split:
        if not split_qualifies(special, split):
            raise DeclarationRefused(f"the given split does not show {special.id}", field="special")
        return Play(special=special, split=split)
    qualification = qualifies(special, cards, counting=counting)
    if qualification is None:
        raise DeclarationRefused(
            f"the cards do not qualify for {special.id} ({special.chinese})", field="special"
        )
    return Play(special=special, split=qualification.split)


# Cards and plays as a round stores them are parsed by content, once per distinct hand or
# submission for the whole process: every copy of a round the repository hands out finds them
# here, so the aggregate keeps no parse caches of its own. Values are immutable and shared.
# Every round brings new hands, so these fill and stay full: their bounds are what they
# weigh (an entry holds at most 13 cards, so a bound on entries bounds their bytes). The
# rounds being played and read now are what hits.
PARSED_PILES = 16_384  # hands and piles, about 1 kB each: 16 MiB at most
STORED_PLAYS = 4_096  # submissions, about 1.5 kB each besides their piles: 6 MiB at most


@lru_cache(maxsize=PARSED_PILES)
def parsed_cards(texts: tuple[str, ...], copies: int = 1) -> tuple[Card, ...]:
    """Stored cards, each at most ``copies`` times (2 with extra suits, R14.2.3)."""
    return parse_cards(texts, copies=copies)


@lru_cache(maxsize=STORED_PLAYS)
def stored_play(
    special: str,
    front: tuple[str, ...],
    middle: tuple[str, ...],
    back: tuple[str, ...],
    copies: int = 1,
) -> Play:
    piles = (
        parsed_cards(front, copies),
        parsed_cards(middle, copies),
        parsed_cards(back, copies),
    )
    if special:
        split = Split(*piles) if piles[0] else None
        return Play(special=Special.from_id(special), split=split)
    return Play(Arrangement(*piles))
