"""Special hands: the fourteen patterns, their order and points, and who qualifies (R5); with
copies of cards, how groups are counted and the two extra specials (R14.4).

>>> from domain.rules.cards import parse_cards
>>> hand = parse_cards("2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As".split())
>>> [q.special.id for q in qualifying(hand)]
['six_pairs', 'three_flushes']
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from domain.errors import SpecialError, quoted
from domain.rules.cards import Card
from domain.rules.hands import Category, Wheel, category_of, evaluator5, value5


class Special(enum.Enum):
    """R5.1: the special hands, strongest first; ``order`` 1 is the strongest (R5.2). The two
    of R14.4.3, declarable only where a ruleset's ``extra_specials`` enables them, rank right
    after three_quads (their ``order`` is three_quads'; the enum's order decides, ``beats``)."""

    SUPREME_DRAGON = (1, "至尊清龙", 108)
    DRAGON = (2, "一条龙", 36)
    TWELVE_ROYALS = (3, "十二皇族", 24)
    THREE_STRAIGHT_FLUSHES = (4, "三同花顺", 20)
    THREE_QUADS = (5, "三分天下", 20)
    TWO_FIVES_ONE_TRIPS = (5, "三皇五帝", 20)  # R14.4.3
    SIX_OF_A_KIND = (5, "六六大顺", 20)  # R14.4.3
    ALL_BIG = (6, "全大", 10)
    ALL_SMALL = (7, "全小", 10)
    ONE_COLOR = (8, "凑一色", 10)
    TWO_MONSTERS_FRONT_TRIPS = (9, "双怪冲三", 6)
    FOUR_TRIPS = (10, "四套三条", 6)
    FIVE_PAIRS_TRIPS = (11, "五对三条", 5)
    SIX_PAIRS = (12, "六对半", 4)
    THREE_STRAIGHTS = (13, "三顺子", 4)
    THREE_FLUSHES = (14, "三同花", 3)

    def __init__(self, order: int, chinese: str, points: int) -> None:
        self.order = order
        self.chinese = chinese
        self.default_points = points

    @property
    def id(self) -> str:
        return self.name.lower()

    @property
    def is_split(self) -> bool:
        """R5.5: patterns that need a split into front, middle and back."""
        return self in SPLIT_PATTERNS

    def beats(self, other: Special) -> bool:
        """R5.2: the table's order decides, whatever the points (R14.4.3: the extra specials
        right after three_quads)."""
        return _STRENGTH[self] < _STRENGTH[other]

    @classmethod
    def from_id(cls, ident: str) -> Special:
        special = _BY_ID.get(ident) if isinstance(ident, str) else None
        if special is None:
            known = ", ".join(s.id for s in BASE_SPECIALS)
            raise SpecialError(
                f"unknown special {quoted(ident, 20)}; known: {known}, R14.4.3's where "
                "enabled, or 'any'",
                field="special",
            )
        return special


_BY_ID = {special.id: special for special in Special}
_STRENGTH = {special: place for place, special in enumerate(Special)}

EXTRA_SPECIALS = (Special.TWO_FIVES_ONE_TRIPS, Special.SIX_OF_A_KIND)
"""R14.4.3: specials a ruleset may enable with ``extra_specials``."""
BASE_SPECIALS = tuple(s for s in Special if s not in EXTRA_SPECIALS)
"""R5.1: the fourteen special hands every ruleset knows."""


SPLIT_PATTERNS = frozenset(
    {
        Special.THREE_STRAIGHT_FLUSHES,
        Special.TWO_MONSTERS_FRONT_TRIPS,
        Special.THREE_STRAIGHTS,
        Special.THREE_FLUSHES,
    }
)
ANY = "any"
"""R5.4: declare ``any`` to take the strongest special the cards qualify for."""


@dataclass(frozen=True)
class Split:
    """A 3/5/5 split of thirteen cards, unchecked; for the split patterns it is recorded (R5.5),
    and an ``Arrangement`` is one checked against R4.1."""

    front: tuple[Card, ...]
    middle: tuple[Card, ...]
    back: tuple[Card, ...]

    @property
    def piles(self) -> tuple[tuple[Card, ...], ...]:
        return (self.front, self.middle, self.back)

    @property
    def cards(self) -> tuple[Card, ...]:
        return self.front + self.middle + self.back


@dataclass(frozen=True)
class Qualification:
    """A special the cards qualify for, with the split that shows it for split patterns."""

    special: Special
    split: Split | None = None


def _partition_pairs(counts: Sequence[int], quad_counts_as_two_pairs: bool) -> int:
    """Most disjoint pairs the rank counts give (two from one rank only if quads count)."""
    per_rank = 2 if quad_counts_as_two_pairs else 1
    return sum(min(c // 2, per_rank) for c in counts)


def _groups(counts: Sequence[int], size: int) -> int:
    """R14.4.1 ``partition``: a rank held n times gives ⌊n/size⌋ groups of ``size``."""
    return sum(c // size for c in counts)


def _rank_counts(cards: Sequence[Card]) -> Counter[int]:
    return Counter(c.rank for c in cards)


class Counting:
    """How group patterns count (R5.1, R14.4.1): ``quad_counts_as_two_pairs`` and
    ``special_counting`` (``exact``: R5.1's groups, one from a rank; ``partition``: ⌊n/k⌋)."""

    __slots__ = ("partition", "quads")

    def __init__(self, quad_counts_as_two_pairs: bool = False, special_counting: str = "exact"):
        self.quads = quad_counts_as_two_pairs
        self.partition = special_counting == "partition"


def _three_quads(cards: Sequence[Card], rules: Counting) -> bool:
    counts = _rank_counts(cards).values()
    if rules.partition:
        return _groups(list(counts), 4) >= 3
    return sum(1 for c in counts if c == 4) == 3


def _four_trips(cards: Sequence[Card], rules: Counting) -> bool:
    counts = _rank_counts(cards).values()
    if rules.partition:
        return _groups(list(counts), 3) >= 4
    # A quad supplies a trip and the single (R5.1).
    return sum(1 for c in counts if c >= 3) == 4


def _five_pairs_trips(cards: Sequence[Card], rules: Counting) -> bool:
    counts = _rank_counts(cards)
    for rank, count in counts.items():
        # exact (R14.4.1): the trips are a rank held three times, not part of five copies
        if count == 3 or (rules.partition and count > 3):
            rest = [c - 3 if r == rank else c for r, c in counts.items()]
            if rules.partition:
                if _groups(rest, 2) >= 5:
                    return True
            elif all(c % 2 == 0 for c in rest) and _partition_pairs(rest, rules.quads) == 5:
                return True
    return False


def _six_pairs(cards: Sequence[Card], rules: Counting) -> bool:
    counts = list(_rank_counts(cards).values())
    if rules.partition:
        return _groups(counts, 2) >= 6
    return _partition_pairs(counts, rules.quads) == 6


def _dragon(cards: Sequence[Card], rules: Counting) -> bool:
    return len({c.rank for c in cards}) == 13


def _supreme_dragon(cards: Sequence[Card], rules: Counting) -> bool:
    return _dragon(cards, rules) and len({c.suit for c in cards}) == 1


def _two_fives_one_trips(cards: Sequence[Card], rules: Counting) -> bool:
    """R14.4.3 三皇五帝: ranks held 5 + 5 + 3."""
    return sorted(_rank_counts(cards).values()) == [3, 5, 5]


def _six_of_a_kind(cards: Sequence[Card], rules: Counting) -> bool:
    """R14.4.3 六六大顺: at least six cards of one rank."""
    return max(_rank_counts(cards).values()) >= 6


_JACK = 9
_EIGHT = 6

_WHOLE_HAND: dict[Special, Callable[[Sequence[Card], Counting], bool]] = {
    Special.SUPREME_DRAGON: _supreme_dragon,
    Special.DRAGON: _dragon,
    Special.TWELVE_ROYALS: lambda cards, _: all(c.rank >= _JACK for c in cards),
    Special.THREE_QUADS: _three_quads,
    Special.TWO_FIVES_ONE_TRIPS: _two_fives_one_trips,
    Special.SIX_OF_A_KIND: _six_of_a_kind,
    Special.ALL_BIG: lambda cards, _: all(c.rank >= _EIGHT for c in cards),
    Special.ALL_SMALL: lambda cards, _: all(c.rank <= _EIGHT for c in cards),
    Special.ONE_COLOR: lambda cards, _: len({c.is_red for c in cards}) == 1,
    Special.FOUR_TRIPS: _four_trips,
    Special.FIVE_PAIRS_TRIPS: _five_pairs_trips,
    Special.SIX_PAIRS: _six_pairs,
}


# R5.3: three-card runs, A-2-3 and Q-K-A both counting.
_RUNS3 = frozenset(frozenset({r, r + 1, r + 2}) for r in range(11)) | {frozenset({12, 0, 1})}


def _front_run(front: Sequence[Card]) -> bool:
    return frozenset(c.rank for c in front) in _RUNS3


def _front_suited(front: Sequence[Card]) -> bool:
    return len({c.suit for c in front}) == 1


def _front_trips(front: Sequence[Card]) -> bool:
    return len({c.rank for c in front}) == 1


# Per split pattern: which five-card categories middle and back may be, and the front test.
_STRAIGHTS = frozenset({Category.STRAIGHT, Category.STRAIGHT_FLUSH})
_FLUSHES = frozenset({Category.FLUSH, Category.STRAIGHT_FLUSH})
_SPLIT_RULES: dict[Special, tuple[frozenset[Category], Callable[[Sequence[Card]], bool]]] = {
    Special.THREE_STRAIGHT_FLUSHES: (
        frozenset({Category.STRAIGHT_FLUSH}),
        lambda f: _front_run(f) and _front_suited(f),
    ),
    Special.TWO_MONSTERS_FRONT_TRIPS: (  # R14.4.2: five_of_a_kind is a monster too
        frozenset({Category.FOUR_OF_A_KIND, Category.STRAIGHT_FLUSH, Category.FIVE_OF_A_KIND}),
        _front_trips,
    ),
    Special.THREE_STRAIGHTS: (_STRAIGHTS, _front_run),
    Special.THREE_FLUSHES: (_FLUSHES, _front_suited),
}


def split_qualifies(special: Special, split: Split) -> bool:
    """R5.1 rows 4, 9, 13, 14: does this very split show the pattern? (R14.4.2: two copies of
    a card are two cards.)"""
    categories, front_ok = _SPLIT_RULES[special]
    return (
        front_ok(split.front)
        and category_of(value5(split.middle)) in categories
        and category_of(value5(split.back)) in categories
    )


Subsets = list[tuple[int, tuple[Card, ...], int]]
"""(bit mask of positions, cards, value) of every five-card subset of a hand."""


def five_card_subsets(cards: Sequence[Card], order: Wheel = "second") -> Subsets:
    """All 1,287 five-card subsets of thirteen cards with their values, strongest first. The
    subsets are of positions, so two copies of a card are two cards (R14.4.2)."""
    kev, flushes, others = evaluator5(order)
    subsets = []
    for combo in itertools.combinations(range(len(cards)), 5):
        five = tuple(cards[i] for i in combo)
        a, b, c, d, e = kev[five[0]], kev[five[1]], kev[five[2]], kev[five[3]], kev[five[4]]
        if a & b & c & d & e & 0xF000:
            value = (
                flushes.get((a | b | c | d | e) >> 16)
                or others[-(a & 0xFF) * (b & 0xFF) * (c & 0xFF) * (d & 0xFF) * (e & 0xFF)]
            )
        else:
            value = others[(a & 0xFF) * (b & 0xFF) * (c & 0xFF) * (d & 0xFF) * (e & 0xFF)]
        subsets.append((sum(1 << i for i in combo), five, value))
    subsets.sort(key=lambda s: s[2], reverse=True)
    return subsets


def find_split(
    special: Special, cards: Sequence[Card], subsets: Subsets | None = None
) -> Split | None:
    """R5.5: a split of the thirteen cards that shows the pattern, or None.

    Middle and back are both drawn from the five-card subsets whose category fits, so the
    search is over pairs of fitting subsets rather than all 72,072 splits; the stronger of the
    two becomes the back.
    """
    if special is Special.THREE_FLUSHES:
        return _three_flushes_split(cards)
    categories, front_ok = _SPLIT_RULES[special]
    fitting = [
        (m, five)
        for m, five, v in subsets or five_card_subsets(cards)
        if category_of(v) in categories
    ]
    full = (1 << len(cards)) - 1
    for i, (back_mask, back) in enumerate(fitting):
        for middle_mask, middle in fitting[i + 1 :]:
            if back_mask & middle_mask:
                continue
            rest = full & ~(back_mask | middle_mask)
            front = tuple(cards[j] for j in range(len(cards)) if rest >> j & 1)
            if front_ok(front):
                return Split(front, middle, back)
    return None


def _three_flushes_split(cards: Sequence[Card]) -> Split | None:
    """Three one-suit piles exist exactly when the suit counts are sums of 3, 5 and 5: try
    the 64 ways to give each pile a suit instead of searching pairs of flushes."""
    by_suit: dict[int, list[Card]] = {s: [] for s in range(4)}
    for card in sorted(cards, reverse=True):
        by_suit[card.suit].append(card)
    for suits in itertools.product(range(4), repeat=3):  # front, middle, back
        need = dict.fromkeys(range(4), 0)
        for suit, size in zip(suits, (3, 5, 5), strict=True):
            need[suit] += size
        if all(len(by_suit[s]) == need[s] for s in range(4)):
            pools = {s: list(by_suit[s]) for s in range(4)}
            back = tuple(pools[suits[2]][:5])
            del pools[suits[2]][:5]
            middle = tuple(pools[suits[1]][:5])
            del pools[suits[1]][:5]
            return Split(tuple(pools[suits[0]]), middle, back)
    return None


def qualifies(
    special: Special,
    cards: Sequence[Card],
    *,
    quad_counts_as_two_pairs: bool = False,
    subsets: Subsets | None = None,
    counting: Counting | None = None,
) -> Qualification | None:
    """R5.1: whether the thirteen cards qualify for ``special`` (with a split if it needs one);
    ``counting`` (R14.4.1) overrides ``quad_counts_as_two_pairs`` when given."""
    if special in _WHOLE_HAND:
        rules = counting or Counting(quad_counts_as_two_pairs)
        ok = _WHOLE_HAND[special](cards, rules)
        return Qualification(special) if ok else None
    split = find_split(special, cards, subsets)
    return Qualification(special, split) if split is not None else None


def qualifying(
    cards: Sequence[Card],
    *,
    quad_counts_as_two_pairs: bool = False,
    counting: Counting | None = None,
    specials: Sequence[Special] = BASE_SPECIALS,
    subsets: Subsets | None = None,
) -> list[Qualification]:
    """R5.6: every special among ``specials`` (a ruleset's: R14.4.3, R14.5.4) the cards qualify
    for, in R5.2's order, strongest first."""
    found = []
    subsets = subsets or five_card_subsets(cards)
    rules = counting or Counting(quad_counts_as_two_pairs)
    for special in specials:
        q = qualifies(special, cards, subsets=subsets, counting=rules)
        if q is not None:
            found.append(q)
    return found
