"""Pile hands: categories, evaluation and comparison (R2, R3).

A pile's *value* is an ``int`` whose order is the order of R2: the category sits in the high bits,
a tier below it (0 but for a flush under R14.3.4 ``flush_pairs_first``: its number of pairs), and
the ranks that break ties (R2.3, grouped by count then rank, high first) below that, four bits
each. Bigger is stronger, equal is a tie (R2.4, R14.3.3) — suits never enter (R1.3).

>>> from domain.rules.cards import parse_cards
>>> describe(value5(parse_cards("2s 6s 8s Js As".split())))
'flush, A-high'
>>> value3(parse_cards("Qh Qd 3c".split())) > value3(parse_cards("Kh 7d 4c".split()))
True

Evaluation is by lookup, in the manner of Cactus Kev: a five-card pile of one suit is found by
the set of its ranks, any other pile by the product of one prime per rank. With extra suits
(R14.2.3) a card may have a copy, so a pile may hold five of a rank (R14.3.1) or a flush with a
repeated rank; those are found by the product too.

>>> describe(value5(parse_cards("4c 4d 4d 4h 4s".split(), copies=2)))
'five of a kind, 4s'
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import NamedTuple

from domain.rules.cards import RANKS, Card

RANK_BITS = 4
TIER_SHIFT = 5 * RANK_BITS
CATEGORY_SHIFT = TIER_SHIFT + RANK_BITS
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)


class Category(enum.IntEnum):
    """R2.1: the nine categories, weakest first, so that a stronger category is a bigger int;
    R14.3.1 adds a tenth, five_of_a_kind, which only a deck with extra suits can give."""

    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8
    FIVE_OF_A_KIND = 9

    @property
    def id(self) -> str:
        """The category's id as written in the rule book (docs/rules.md): ``three_of_a_kind``."""
        return self.name.lower()

    @property
    def words(self) -> str:
        return self.name.lower().replace("_", " ")

    @classmethod
    def from_id(cls, ident: str) -> Category:
        return cls[ident.upper()]


FRONT_CATEGORIES = (Category.HIGH_CARD, Category.PAIR, Category.THREE_OF_A_KIND)
"""R2.2: the only categories of a three-card front pile."""

WHEELS = ("second", "lowest")
"""R2.3 ruleset parameter ``wheel``: where A-2-3-4-5 ranks among straights."""


class PileOrder(NamedTuple):
    """The ruleset parameters that order piles: ``wheel`` (R2.3), ``group_kickers`` (R14.3.3)
    and ``flush_pairs_first`` (R14.3.4). The defaults are R2's order."""

    wheel: str = "second"
    group_kickers: bool = True
    flush_pairs_first: bool = False


Wheel = str | PileOrder
"""What the evaluators take: a ``wheel`` alone (R2's order otherwise), or a whole ``PileOrder``."""


def pile_order(wheel: Wheel) -> PileOrder:
    return PileOrder(wheel) if isinstance(wheel, str) else wheel


_CATEGORIES = tuple(Category)


def category_of(value: int) -> Category:
    return _CATEGORIES[value >> CATEGORY_SHIFT]


def _pack(category: Category, ranks: Sequence[int], tier: int = 0) -> int:
    value = (int(category) << RANK_BITS) | tier
    for i in range(5):
        value = (value << RANK_BITS) | (ranks[i] if i < len(ranks) else 0)
    return value


def tie_ranks(value: int) -> tuple[int, ...]:
    """The ranks that break ties within the category (R2.3), unpacked from a value."""
    category = category_of(value)
    length = _KEY_LENGTH[category]
    if category == Category.FLUSH:  # R14.3.4: a pair's rank once, so a rank fewer a pair
        length -= (value >> (RANK_BITS * 5)) & 0xF
    ranks = ((value >> (RANK_BITS * (4 - i))) & 0xF for i in range(length))
    return tuple(r for r in ranks if r != _NO_KICKER)


_KEY_LENGTH = {
    Category.HIGH_CARD: 5,
    Category.PAIR: 4,
    Category.TWO_PAIR: 3,
    Category.THREE_OF_A_KIND: 3,
    Category.STRAIGHT: 1,
    Category.FLUSH: 5,
    Category.FULL_HOUSE: 2,
    Category.FOUR_OF_A_KIND: 2,
    Category.STRAIGHT_FLUSH: 1,
    Category.FIVE_OF_A_KIND: 1,
}

# A straight's key (R2.3) is its top rank less two (6-high → 2 … K-high → 9) and 11 for A-high,
# which leaves 10 for the wheel when ``wheel`` is ``second`` and 1 when it is ``lowest``.
_WHEEL_RANKS = frozenset({12, 0, 1, 2, 3})
_WHEEL_KEY = {"second": 10, "lowest": 1}
_BROADWAY_KEY = 11


def _straight_key(ranks: frozenset[int], wheel: str) -> int | None:
    if len(ranks) != 5:
        return None
    if ranks == _WHEEL_RANKS:
        return _WHEEL_KEY[wheel]
    top = max(ranks)
    if top - min(ranks) != 4:
        return None
    return _BROADWAY_KEY if top == 12 else top - 2


def _grouped(ranks: Sequence[int]) -> tuple[list[int], list[int]]:
    """Ranks grouped by count then rank, high first (R2.3, R3), and their counts."""
    counts = Counter(ranks)
    order = sorted(counts, key=lambda r: (counts[r], r), reverse=True)
    return order, [counts[r] for r in order]


_GROUPED = {
    (5,): Category.FIVE_OF_A_KIND,  # R14.3.1
    (4, 1): Category.FOUR_OF_A_KIND,
    (3, 2): Category.FULL_HOUSE,
    (3, 1, 1): Category.THREE_OF_A_KIND,
    (2, 2, 1): Category.TWO_PAIR,
    (2, 1, 1, 1): Category.PAIR,
    (1, 1, 1, 1, 1): Category.HIGH_CARD,
}
# R14.3.3: with ``group_kickers`` false these compare by the group's rank alone: every kicker
# is packed as the same mark, which is no rank.
_NO_KICKER = 0xF
_GROUP_ONLY = frozenset({Category.THREE_OF_A_KIND, Category.FULL_HOUSE, Category.FOUR_OF_A_KIND})


def _classify5(ranks: Sequence[int], flush: bool, order: PileOrder) -> int:
    straight = _straight_key(frozenset(ranks), order.wheel)
    if straight is not None:
        return _pack(Category.STRAIGHT_FLUSH if flush else Category.STRAIGHT, [straight])
    grouped, counts = _grouped(ranks)
    if flush:  # R2.3; R14.3.4 with flush_pairs_first: the pairs first, then the ranks
        if not order.flush_pairs_first:
            return _pack(Category.FLUSH, sorted(ranks, reverse=True))
        return _pack(Category.FLUSH, grouped, tier=counts.count(2))
    category = _GROUPED[tuple(counts)]
    if category in _GROUP_ONLY and not order.group_kickers:
        grouped = [grouped[0], *[_NO_KICKER] * (len(grouped) - 1)]
    return _pack(category, grouped)


def _classify3(ranks: Sequence[int]) -> int:
    """R2.2: a front is trips, pair or high card; suits and sequences do not count."""
    order, counts = _grouped(ranks)
    category = {
        (3,): Category.THREE_OF_A_KIND,
        (2, 1): Category.PAIR,
        (1, 1, 1): Category.HIGH_CARD,
    }[tuple(counts)]
    return _pack(category, order)


def _product(ranks: Sequence[int]) -> int:
    product = 1
    for rank in ranks:
        product *= _PRIMES[rank]
    return product


def _tables(wheel: Wheel) -> tuple[dict[int, int], dict[int, int]]:
    """(flush table by rank bits, other table by prime product) for five-card piles. The other
    table also holds, under the negated product, a one-suit pile with a repeated rank, which only
    copies of a card give (R14.2.3)."""
    order = pile_order(wheel)
    flushes: dict[int, int] = {}
    others: dict[int, int] = {}
    for ranks in itertools.combinations_with_replacement(range(13), 5):
        others[_product(ranks)] = _classify5(ranks, False, order)
        if len(set(ranks)) == 5:
            flushes[sum(1 << r for r in ranks)] = _classify5(ranks, True, order)
        elif max(Counter(ranks).values()) <= 2:  # at most two copies of a card (R14.2.2)
            others[-_product(ranks)] = _classify5(ranks, True, order)
    return flushes, others


_FRONT_TABLE = {
    _product(ranks): _classify3(ranks)
    for ranks in itertools.combinations_with_replacement(range(13), 3)
}

# Per card: its rank's prime, its suit bit (bits 12–15) and its rank bit (bits 16–28).
_KEV = tuple(
    _PRIMES[card >> 2] | (1 << (12 + (card & 3))) | (1 << (16 + (card >> 2))) for card in range(52)
)


_TABLES: dict[Wheel, tuple[dict[int, int], dict[int, int]]] = {}


def _tables_of(wheel: Wheel) -> tuple[dict[int, int], dict[int, int]]:
    """The tables of a pile order, built once each, on first use: about 0.2 s of CPU a pile
    order, which a process that never values a pile (``thirteen --help``, a key command, the
    console) does not pay. Two threads asking at once both build it; either result is the same."""
    tables = _TABLES.get(wheel)
    if tables is None:
        order = pile_order(wheel)
        tables = _TABLES.get(order) or _tables(order)
        _TABLES[order] = _TABLES[wheel] = tables
    return tables


def value5(cards: Sequence[Card], wheel: Wheel = "second") -> int:
    """R2.1, R2.3: the value of a five-card (middle or back) pile; R14.3 under a ``PileOrder``."""
    kev = _KEV
    a, b, c, d, e = kev[cards[0]], kev[cards[1]], kev[cards[2]], kev[cards[3]], kev[cards[4]]
    try:
        tables = _TABLES[wheel]
    except KeyError:
        tables = _tables_of(wheel)
    if a & b & c & d & e & 0xF000:
        try:
            return tables[0][(a | b | c | d | e) >> 16]
        except KeyError:  # a repeated rank in one suit: only copies give it (R14.2.3)
            return tables[1][-(a & 0xFF) * (b & 0xFF) * (c & 0xFF) * (d & 0xFF) * (e & 0xFF)]
    return tables[1][(a & 0xFF) * (b & 0xFF) * (c & 0xFF) * (d & 0xFF) * (e & 0xFF)]


def value3(cards: Sequence[Card]) -> int:
    """R2.2, R2.3: the value of a three-card front pile."""
    a, b, c = cards
    return _FRONT_TABLE[_PRIMES[a >> 2] * _PRIMES[b >> 2] * _PRIMES[c >> 2]]


def evaluator5(wheel: Wheel = "second") -> tuple[tuple[int, ...], dict[int, int], dict[int, int]]:
    """The raw tables behind ``value5``, for loops that evaluate thousands of piles: a one-suit
    pile missing from the flush table is in the other table under its negated product."""
    flushes, others = _tables_of(wheel)
    return _KEV, flushes, others


# R3: a front's value compared with a middle's over the front's key length only. Shifting both
# values right by the unused rank slots keeps the category and that many ranks.
_FRONT_SHIFT = {
    Category.THREE_OF_A_KIND: RANK_BITS * 4,
    Category.PAIR: RANK_BITS * 3,
    Category.HIGH_CARD: RANK_BITS * 2,
}


def front_beats_middle(front: int, middle: int) -> bool:
    """R3: does the front pile beat the middle one? Equal is not beating.

    >>> from domain.rules.cards import parse_cards
    >>> f = value3(parse_cards("Kh Kd Ac".split()))
    >>> front_beats_middle(f, value5(parse_cards("Ks Kc As 7d 3h".split())))
    False
    >>> front_beats_middle(f, value5(parse_cards("Qs Qc As 7d 3h".split())))
    True
    """
    shift = _FRONT_SHIFT[category_of(front)]
    return (front >> shift) > (middle >> shift)


def _rank_word(rank: int, plural: bool = False) -> str:
    text = RANKS[rank]
    return text + "s" if plural else text


@cache
def describe(value: int) -> str:
    """A pile value in words: ``flush, A-high``; ``pair, Qs``; ``full house, 9s over 5s``."""
    category = category_of(value)
    ranks = tie_ranks(value)
    if category in (Category.STRAIGHT, Category.STRAIGHT_FLUSH):
        key = ranks[0]
        if key in _WHEEL_KEY.values():
            return f"{category.words}, 5-high (wheel)"
        return f"{category.words}, {_rank_word(12 if key == _BROADWAY_KEY else key + 2)}-high"
    if category in (Category.FLUSH, Category.HIGH_CARD):  # R14.3.4 may put a pair first
        return f"{category.words}, {_rank_word(max(ranks))}-high"
    if category is Category.FULL_HOUSE and len(ranks) > 1:
        return f"{category.words}, {_rank_word(ranks[0], True)} over {_rank_word(ranks[1], True)}"
    if category is Category.TWO_PAIR:
        return f"{category.words}, {_rank_word(ranks[0], True)} and {_rank_word(ranks[1], True)}"
    return f"{category.words}, {_rank_word(ranks[0], True)}"


_FRONT_KEY_LENGTH = {Category.THREE_OF_A_KIND: 1, Category.PAIR: 2, Category.HIGH_CARD: 3}


def describe_against(value: int, other: int, *, front: bool = False) -> str:
    """``describe``, plus every deciding rank when the short words would read the same for
    both piles: ``high card, J-high (J 9 4)`` against ``high card, J-high (J 8 7)``."""
    return describe_both(value, other, front=front)[0]


def describe_both(a: int, b: int, *, front: bool = False) -> tuple[str, str]:
    """``describe_against`` of two piles, each against the other, describing each once."""
    words_a, words_b = describe(a), describe(b)
    if a == b or words_a != words_b:
        return words_a, words_b
    return _with_kickers(words_a, a, front), _with_kickers(words_b, b, front)


def _with_kickers(text: str, value: int, front: bool) -> str:
    category = category_of(value)
    ranks = tie_ranks(value)
    if front:
        ranks = ranks[: _FRONT_KEY_LENGTH[category]]
    return f"{text} ({' '.join(RANKS[r] for r in ranks)})"
