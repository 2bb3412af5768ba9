"""An independent, deliberately naive reference implementation of RULES.md: a test oracle only.

It shares no code with ``domain/``, ``service/`` or ``projections/`` and uses only the standard
library. Everything is brute force so that it can be checked by reading: piles are valued by
sorting and counting ranks, split patterns are found by trying every 3/5/5 split, group
patterns by trying every way of cutting each rank's cards into groups.

The entry points mirror the ``thirteen`` CLI: :func:`score_line` (``thirteen score``),
:func:`deal` and :func:`commitment` (``thirteen deal``) and :func:`qualifying_specials`
(``thirteen suggest``).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeGuard

Card = tuple[int, str]  # (rank 2..14, suit letter)
Pile = tuple[Card, ...]
Split = tuple[Pile, Pile, Pile]

RANKS = "23456789TJQKA"
SUITS = "cdhs"
RANK_VALUE = {letter: value for value, letter in enumerate(RANKS, start=2)}
SUIT_SYMBOLS = {"♣": "c", "♦": "d", "♥": "h", "♠": "s"}
DECK: tuple[Card, ...] = tuple((rank, suit) for rank in range(2, 15) for suit in SUITS)  # R1.4

# R2.1 / R2.2, weakest first so that the index is the strength.
CATEGORIES = (
    "high_card",
    "pair",
    "two_pair",
    "three_of_a_kind",
    "straight",
    "flush",
    "full_house",
    "four_of_a_kind",
    "straight_flush",
)
POSITIONS = ("front", "middle", "back")
PILE_SIZES = {"front": 3, "middle": 5, "back": 5}

# R5.1, strongest first.
SPECIALS: tuple[tuple[str, int], ...] = (
    ("supreme_dragon", 108),
    ("dragon", 36),
    ("twelve_royals", 24),
    ("three_straight_flushes", 20),
    ("three_quads", 20),
    ("all_big", 10),
    ("all_small", 10),
    ("one_color", 10),
    ("two_monsters_front_trips", 6),
    ("four_trips", 6),
    ("five_pairs_trips", 5),
    ("six_pairs", 4),
    ("three_straights", 4),
    ("three_flushes", 3),
)
SPECIAL_IDS = tuple(special for special, _ in SPECIALS)
SPECIAL_POINTS = dict(SPECIALS)
SPLIT_SPECIALS = frozenset(
    {"three_straight_flushes", "two_monsters_front_trips", "three_straights", "three_flushes"}
)


class OracleError(ValueError):
    """Input that the rules reject; the CLI must answer such a line with ``{"error": ...}``."""


# ---------------------------------------------------------------------------------------------
# R1 cards


def parse_card(text: object) -> Card:
    """R1.2: rank then suit; ``10`` for T, either case, suit letters or symbols.

    >>> parse_card("10♠"), parse_card("tD"), parse_card("As")
    ((10, 's'), (10, 'd'), (14, 's'))
    """
    if not isinstance(text, str) or len(text) < 2:
        raise OracleError(f"unknown card {text!r}")
    rank_text, suit_text = text[:-1], text[-1]
    rank = 10 if rank_text == "10" else RANK_VALUE.get(rank_text.upper())
    suit = SUIT_SYMBOLS.get(suit_text, suit_text.lower())
    if rank is None or suit not in SUITS:
        raise OracleError(f"unknown card {text!r}")
    return rank, suit


def card_text(card: Card) -> str:
    """R1.2 output form: ``As``."""
    return RANKS[card[0] - 2] + card[1]


def parse_cards(texts: object, size: int, what: str) -> Pile:
    if not isinstance(texts, list):
        raise OracleError(f"{what} must be a list of cards")
    cards = tuple(parse_card(text) for text in texts)
    if len(cards) != size:
        raise OracleError(f"{what} must have {size} cards, got {len(cards)}")
    return cards


# ---------------------------------------------------------------------------------------------
# R2 / R3 / R4 piles and fouls


def _grouped_ranks(cards: Sequence[Card]) -> tuple[list[int], tuple[int, ...]]:
    """Rank counts and ranks, grouped by count then rank, highest first (R2.3, R3)."""
    counts = Counter(rank for rank, _ in cards)
    order = sorted(counts, key=lambda rank: (counts[rank], rank), reverse=True)
    return [counts[rank] for rank in order], tuple(order)


def straight_rank(cards: Sequence[Card], wheel: str = "second") -> float | None:
    """R2.3: the comparison rank of five consecutive ranks, or None.

    The wheel A-2-3-4-5 ranks just below T-J-Q-K-A (13.5, above the K-high 13) or lowest (5).
    """
    ranks = sorted({rank for rank, _ in cards})
    if len(cards) != 5 or len(ranks) != 5:
        return None
    if ranks == [2, 3, 4, 5, 14]:
        return 13.5 if wheel == "second" else 5
    if ranks[4] - ranks[0] == 4:
        return ranks[4]
    return None


def evaluate(pile: Sequence[Card], wheel: str = "second") -> tuple[str, tuple[float, ...]]:
    """R2.1-R2.3: the category and the within-category key of a 3- or 5-card pile.

    >>> evaluate([(12, "h"), (12, "d"), (3, "c")])
    ('pair', (12, 3))
    >>> evaluate([(14, "c"), (2, "d"), (3, "h"), (4, "s"), (5, "c")], wheel="lowest")
    ('straight', (5,))
    """
    shape, grouped = _grouped_ranks(pile)
    if len(pile) == 3:  # R2.2: no flushes or straights in the front
        return {3: "three_of_a_kind", 2: "pair", 1: "high_card"}[shape[0]], grouped
    flush = len({suit for _, suit in pile}) == 1
    top = straight_rank(pile, wheel)
    if top is not None and flush:
        return "straight_flush", (top,)
    if shape[0] == 4:
        return "four_of_a_kind", grouped
    if shape == [3, 2]:
        return "full_house", grouped
    if flush:
        return "flush", grouped
    if top is not None:
        return "straight", (top,)
    if shape[0] == 3:
        return "three_of_a_kind", grouped
    if shape == [2, 2, 1]:
        return "two_pair", grouped
    if shape[0] == 2:
        return "pair", grouped
    return "high_card", grouped


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _cmp(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def compare_piles(a: Sequence[Card], b: Sequence[Card], wheel: str = "second") -> int:
    """R2.3/R2.4: +1 if pile a beats pile b (same position), -1 if it loses, 0 on a tie."""
    category_a, key_a = evaluate(a, wheel)
    category_b, key_b = evaluate(b, wheel)
    return _cmp((CATEGORIES.index(category_a), key_a), (CATEGORIES.index(category_b), key_b))


def compare_front_with_middle(front: Sequence[Card], middle: Sequence[Card], wheel: str) -> int:
    """R3: categories first, then the grouped ranks over the front's length only.

    >>> kings_ace = [(13, "s"), (13, "h"), (14, "c")]
    >>> compare_front_with_middle(
    ...     kings_ace, [(13, "c"), (13, "d"), (14, "d"), (7, "s"), (3, "s")], "second")
    0
    """
    front_category, front_key = evaluate(front, wheel)
    middle_category, middle_key = evaluate(middle, wheel)
    if front_category != middle_category:
        return _sign(CATEGORIES.index(front_category) - CATEGORIES.index(middle_category))
    return _cmp(front_key, middle_key[: len(front_key)])


def is_foul(
    front: Sequence[Card], middle: Sequence[Card], back: Sequence[Card], wheel: str
) -> bool:
    """R4.2: front > middle (by R3) or middle > back."""
    return (
        compare_front_with_middle(front, middle, wheel) > 0
        or compare_piles(middle, back, wheel) > 0
    )


# ---------------------------------------------------------------------------------------------
# R5 special hands


def _consecutive3(pile: Sequence[Card]) -> bool:
    """R5.3: three consecutive ranks, A-2-3 and Q-K-A included."""
    ranks = sorted(rank for rank, _ in pile)
    return len(set(ranks)) == 3 and (ranks[2] - ranks[0] == 2 or ranks == [2, 3, 14])


def _consecutive5(pile: Sequence[Card]) -> bool:
    """Five consecutive ranks (R2.3: the wheel and T-J-Q-K-A included), suits free."""
    return straight_rank(pile) is not None


def _suited(pile: Sequence[Card]) -> bool:
    return all(suit == pile[0][1] for _, suit in pile)


def _trips(pile: Sequence[Card]) -> bool:
    return all(rank == pile[0][0] for rank, _ in pile)


def _monster(pile: Sequence[Card]) -> bool:
    """A four of a kind or a straight flush."""
    ranks = [rank for rank, _ in pile]
    four = ranks.count(ranks[0]) == 4 or ranks.count(ranks[1]) == 4
    return four or (_suited(pile) and _consecutive5(pile))


# Split patterns (R5.1 rows 4, 9, 13, 14): (front test, test for middle and for back).
PileTest = Callable[[Sequence[Card]], bool]
_SPLIT_TESTS: dict[str, tuple[PileTest, PileTest]] = {
    "three_straight_flushes": (
        lambda p: _suited(p) and _consecutive3(p),
        lambda p: _suited(p) and _consecutive5(p),
    ),
    "two_monsters_front_trips": (_trips, _monster),
    "three_straights": (_consecutive3, _consecutive5),
    "three_flushes": (_suited, _suited),
}

# Group patterns (rows 5, 10, 11, 12): the sizes of the same-rank groups the 13 cards form.
_GROUP_PATTERNS = {
    "three_quads": (4, 4, 4, 1),
    "four_trips": (3, 3, 3, 3, 1),
    "five_pairs_trips": (3, 2, 2, 2, 2, 2),
    "six_pairs": (2, 2, 2, 2, 2, 2, 1),
}

# Every way to cut n cards of one rank into same-rank groups.
_CUTS: dict[int, list[tuple[int, ...]]] = {
    1: [(1,)],
    2: [(2,), (1, 1)],
    3: [(3,), (2, 1), (1, 1, 1)],
    4: [(4,), (3, 1), (2, 2), (2, 1, 1), (1, 1, 1, 1)],
}


def split_qualifies(
    special: str, front: Sequence[Card], middle: Sequence[Card], back: Sequence[Card]
) -> bool:
    """R5.1/R5.5: this very split shows the split pattern (the foul rule does not apply)."""
    front_test, pile_test = _SPLIT_TESTS[special]
    return (
        (len(front), len(middle), len(back)) == (3, 5, 5)
        and front_test(front)
        and pile_test(middle)
        and pile_test(back)
    )


@lru_cache(maxsize=4096)
def find_split(special: str, cards: frozenset[Card]) -> Split | None:
    """R5.5: some 3/5/5 split of the cards that shows the split pattern, by trying them all.

    Every 5-card subset that could be a middle or a back is tested once; then every two
    disjoint ones leave a front, which is tested last.
    """
    front_test, pile_test = _SPLIT_TESTS[special]
    fives = [five for five in itertools.combinations(sorted(cards), 5) if pile_test(five)]
    for index, middle in enumerate(fives):
        for back in fives[index:]:
            if set(middle).isdisjoint(back):
                front = tuple(sorted(cards - set(middle) - set(back)))
                if front_test(front):
                    return front, middle, back
    return None


def holds_groups(
    cards: Sequence[Card], pattern: Sequence[int], quad_counts_as_two_pairs: bool
) -> bool:
    """Partition semantics: the cards split into same-rank groups of exactly these sizes.

    Two pairs of one rank (a four of a kind as two pairs) only with quad_counts_as_two_pairs.
    """
    counts = Counter(rank for rank, _ in cards).values()
    options = [
        [cut for cut in _CUTS[count] if quad_counts_as_two_pairs or cut.count(2) < 2]
        for count in counts
    ]
    target = sorted(pattern)
    return any(
        sorted(itertools.chain.from_iterable(choice)) == target
        for choice in itertools.product(*options)
    )


def qualifies(special: str, cards: Sequence[Card], quad_counts_as_two_pairs: bool = False) -> bool:
    """R5.1: do these 13 cards hold the special (split patterns: under some split)?"""
    ranks = [rank for rank, _ in cards]
    suits = {suit for _, suit in cards}
    if special == "supreme_dragon":
        return len(set(ranks)) == 13 and len(suits) == 1
    if special == "dragon":
        return len(set(ranks)) == 13
    if special == "twelve_royals":
        return all(rank >= 11 for rank in ranks)
    if special == "all_big":
        return all(rank >= 8 for rank in ranks)
    if special == "all_small":
        return all(rank <= 8 for rank in ranks)
    if special == "one_color":
        return suits <= {"s", "c"} or suits <= {"h", "d"}
    if special in _GROUP_PATTERNS:
        return holds_groups(cards, _GROUP_PATTERNS[special], quad_counts_as_two_pairs)
    if special in SPLIT_SPECIALS:
        return find_split(special, frozenset(cards)) is not None
    raise OracleError(f"unknown special {special!r}")


def qualifying_specials(cards: Sequence[Card], quad_counts_as_two_pairs: bool = False) -> list[str]:
    """R5.6: every special the cards qualify for, strongest first (R5.2)."""
    return [s for s in SPECIAL_IDS if qualifies(s, cards, quad_counts_as_two_pairs)]


# ---------------------------------------------------------------------------------------------
# R13 rulesets


@dataclass
class Ruleset:
    """R13: every parameter, defaults of the `standard` preset."""

    wheel: str = "second"
    scoop_multiplier: int = 2
    home_run_multiplier: int = 2
    home_run_min_players: int = 4
    foul_counts_for_home_run: bool = True
    pile_bonuses: dict[str, dict[str, int]] = field(default_factory=dict)
    special_points: dict[str, int] = field(default_factory=lambda: dict(SPECIAL_POINTS))
    quad_counts_as_two_pairs: bool = False
    seat_minimum: int = 48
    stake_policy: str = "by_balance"
    escape_penalty_multiple: int = 25
    arrange_seconds: int = 60

    def pile_value(self, position: str, category: str) -> int:
        """R6.1: a won pile is worth the bonus of the winner's category there, else 1."""
        return self.pile_bonuses.get(position, {}).get(category, 1)


FUJIAN_BONUSES = {
    "front": {"three_of_a_kind": 3},
    "middle": {"full_house": 2, "four_of_a_kind": 8, "straight_flush": 10},
    "back": {"four_of_a_kind": 4, "straight_flush": 5},
}


def preset(name: str) -> Ruleset:
    """R13 presets."""
    if name == "standard":
        return Ruleset()
    if name == "fujian":
        return Ruleset(pile_bonuses={k: dict(v) for k, v in FUJIAN_BONUSES.items()})
    raise OracleError(f"unknown ruleset {name!r}")


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(name: str, value: object, minimum: int = 0) -> int:
    if not _is_int(value) or value < minimum:
        raise OracleError(f"ruleset parameter {name} must be an integer >= {minimum}")
    return value


def _check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise OracleError(f"ruleset parameter {name} must be one of {list(choices)}")
    return value


def _check_bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise OracleError(f"ruleset parameter {name} must be true or false")
    return value


def parse_ruleset(value: object) -> Ruleset:
    """A preset name or an object of R13 parameters over a preset (key "preset")."""
    if value is None:
        return preset("standard")
    if isinstance(value, str):
        return preset(value)
    if not isinstance(value, dict):
        raise OracleError("ruleset must be a preset name or an object")
    base_name = value.get("preset", "standard")
    if not isinstance(base_name, str):
        raise OracleError("ruleset preset must be a name")
    rules = preset(base_name)
    for name, given in value.items():
        if name == "preset":
            continue
        if name == "wheel":
            rules.wheel = _check_choice(name, given, ("second", "lowest"))
        elif name in (
            "scoop_multiplier",
            "home_run_multiplier",
            "home_run_min_players",
            "seat_minimum",
            "escape_penalty_multiple",
            "arrange_seconds",
        ):
            setattr(rules, name, _check_int(name, given))
        elif name in ("foul_counts_for_home_run", "quad_counts_as_two_pairs"):
            setattr(rules, name, _check_bool(name, given))
        elif name == "stake_policy":
            rules.stake_policy = _check_choice(name, given, ("by_balance", "fixed"))
        elif name == "pile_bonuses":
            rules.pile_bonuses = _parse_pile_bonuses(given)
        elif name == "special_points":
            if not isinstance(given, dict):
                raise OracleError("special_points must be an object")
            for special, points in given.items():
                if special not in SPECIAL_POINTS:
                    raise OracleError(f"unknown special {special!r} in special_points")
                rules.special_points[special] = _check_int(f"special_points.{special}", points)
        else:
            raise OracleError(f"unknown ruleset parameter {name!r}")
    return rules


def _parse_pile_bonuses(given: object) -> dict[str, dict[str, int]]:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise OracleError("pile_bonuses must be an object")
    table: dict[str, dict[str, int]] = {}
    for position, bonuses in given.items():
        if position not in POSITIONS or not isinstance(bonuses, dict):
            raise OracleError(f"pile_bonuses: unknown pile {position!r}")
        table[position] = {}
        for category, points in bonuses.items():
            if category not in CATEGORIES:
                raise OracleError(f"pile_bonuses: unknown category {category!r}")
            table[position][category] = _check_int(f"pile_bonuses.{position}", points)
    return table


# ---------------------------------------------------------------------------------------------
# R6 showdown


@dataclass
class Seat:
    """One player of a scored round after validation."""

    id: str
    cards: frozenset[Card]
    special: str | None = None
    piles: Split | None = None
    foul: bool = False
    balance: int | None = None

    @property
    def normal(self) -> bool:
        return self.special is None and not self.foul


def _parse_seat(entry: object, rules: Ruleset) -> Seat:
    if not isinstance(entry, dict):
        raise OracleError("each player must be an object")
    player_id = entry.get("id")
    if not isinstance(player_id, str) or not player_id:
        raise OracleError("each player needs an id")
    balance = entry.get("balance")
    if balance is not None and (not _is_int(balance) or balance < 0):
        raise OracleError(f"player {player_id}: balance must be an integer >= 0")
    piles: Split | None = None
    if "front" in entry or "middle" in entry or "back" in entry:
        front, middle, back = (
            parse_cards(entry.get(pos), PILE_SIZES[pos], f"player {player_id} {pos}")
            for pos in POSITIONS
        )
        piles = (front, middle, back)
        cards: Pile = front + middle + back
    elif "special" in entry:
        cards = parse_cards(entry.get("cards"), 13, f"player {player_id} cards")
    else:
        raise OracleError(f"player {player_id}: give front/middle/back or a special")
    if len(set(cards)) != len(cards):
        raise OracleError(f"player {player_id}: a card appears twice")
    seat = Seat(player_id, frozenset(cards), piles=piles, balance=balance)
    if "special" in entry:
        try:
            seat.special = resolve_special(
                entry["special"], seat.cards, piles, rules.quad_counts_as_two_pairs
            )
        except OracleError as error:
            raise OracleError(f"player {player_id}: {error}") from None
    else:
        assert piles is not None
        seat.foul = is_foul(*piles, rules.wheel)
    return seat


def resolve_special(
    declared: object, cards: frozenset[Card], piles: Split | None, quad_counts_as_two_pairs: bool
) -> str:
    """R5.4: a named special must be held; `any` takes the strongest held.

    With piles given, a split pattern counts only if those very piles show it (R5.5).
    """
    if declared != "any" and declared not in SPECIAL_IDS:
        raise OracleError(f"unknown special {declared!r}")
    candidates = SPECIAL_IDS if declared == "any" else (declared,)
    for special in candidates:
        if special in SPLIT_SPECIALS and piles is not None:
            held = split_qualifies(special, *piles)
        else:
            held = qualifies(special, sorted(cards), quad_counts_as_two_pairs)
        if held:
            return special
    if declared == "any":
        raise OracleError("the cards (as given) hold no special hand")
    raise OracleError(f"the cards (as given) do not hold {declared}")


@dataclass
class PairResult:
    a: int
    b: int
    points: int = 0
    piles: list[int] = field(default_factory=list)
    scooper: int | None = None
    home_run: bool = False


def _compare_normals(a: Seat, b: Seat, rules: Ruleset, pair: PairResult) -> None:
    """R6.1-R6.4 before multipliers: piles from a's view, raw points and who scooped."""
    if a.foul and b.foul:  # R6.4
        pair.piles = [0, 0, 0]
        return
    values = []
    for index, position in enumerate(POSITIONS):
        if a.foul or b.foul:  # R6.3: the normal side wins every pile
            outcome = -1 if a.foul else 1
        else:
            assert a.piles is not None and b.piles is not None
            outcome = compare_piles(a.piles[index], b.piles[index], rules.wheel)
        winner = a if outcome > 0 else b
        value = 0
        if outcome:
            assert winner.piles is not None
            category = evaluate(winner.piles[index], rules.wheel)[0]
            value = outcome * rules.pile_value(position, category)
        pair.piles.append(outcome)
        values.append(value)
    pair.points = sum(values)
    if 1 in pair.piles and -1 not in pair.piles:  # R6.2, roll-over included
        pair.scooper = pair.a
    elif -1 in pair.piles and 1 not in pair.piles:
        pair.scooper = pair.b


def _compare_specials(a: Seat, b: Seat, rules: Ruleset, pair: PairResult) -> None:
    """R6.5/R6.6: fixed points, no multiplier, no piles compared."""
    if a.special is not None and b.special is not None:
        order = _cmp(SPECIAL_IDS.index(b.special), SPECIAL_IDS.index(a.special))
        winner = a.special if order > 0 else b.special
        pair.points = order * rules.special_points[winner]
    elif a.special is not None:
        pair.points = rules.special_points[a.special]
    else:
        assert b.special is not None
        pair.points = -rules.special_points[b.special]


def showdown(seats: Sequence[Seat], rules: Ruleset) -> list[PairResult]:
    """R6: every unordered pair in seat order, with scoops and home runs applied."""
    pairs = []
    for i, j in itertools.combinations(range(len(seats)), 2):
        pair = PairResult(i, j)
        if seats[i].special is None and seats[j].special is None:
            _compare_normals(seats[i], seats[j], rules, pair)
        else:
            _compare_specials(seats[i], seats[j], rules, pair)
        pairs.append(pair)

    def counts_for_home_run(pair: PairResult, player: int) -> bool:
        victim = seats[pair.b if pair.a == player else pair.a]
        return pair.scooper == player and (not victim.foul or rules.foul_counts_for_home_run)

    home_runs = {
        player
        for player in range(len(seats))
        if len(seats) >= rules.home_run_min_players
        and all(counts_for_home_run(p, player) for p in pairs if player in (p.a, p.b))
    }  # R6.7
    for pair in pairs:
        if pair.scooper is not None:
            pair.points *= rules.scoop_multiplier
            if pair.scooper in home_runs:
                pair.home_run = True
                pair.points *= rules.home_run_multiplier
    return pairs


# ---------------------------------------------------------------------------------------------
# R9 settlement, R11 escape


def settle(gross: Sequence[int], balances: Sequence[int]) -> list[int]:
    """R9.1/R9.2: losers pay min(loss, balance); short winners are scaled, floor + remainders.

    >>> settle([50, 40, -90], [0, 0, 50])
    [28, 22, -50]
    """
    payments = [
        min(-g, balance) if g < 0 else 0 for g, balance in zip(gross, balances, strict=True)
    ]
    paid = sum(payments)
    owed = sum(g for g in gross if g > 0)
    if paid >= owed:
        return [-p if g < 0 else g for g, p in zip(gross, payments, strict=True)]
    result = [-p if g < 0 else 0 for g, p in zip(gross, payments, strict=True)]
    winners = [i for i, g in enumerate(gross) if g > 0]
    for i in winners:
        result[i] = gross[i] * paid // owed
    leftover = paid - sum(result[i] for i in winners)
    by_remainder = sorted(winners, key=lambda i: (-(gross[i] * paid % owed), i))
    for i in by_remainder[:leftover]:
        result[i] += 1
    return result


def escape_penalty(base: int, balance: int, multiple: int = 25) -> int:
    """R11.1: min(escape_penalty_multiple × base, balance at the deal)."""
    return min(multiple * base, balance)


def share_escape_penalty(
    penalty: int, escapee: int, remaining: Sequence[int], seat_count: int
) -> dict[int, int]:
    """R11.2: equal shares; leftover coins one each in seat order from the seat after the escapee.

    >>> share_escape_penalty(25, 1, [0, 2, 3], 4)
    {2: 9, 3: 8, 0: 8}
    """
    order = sorted(remaining, key=lambda seat: (seat - escapee) % seat_count)
    shares = {seat: penalty // len(order) for seat in order}
    for seat in order[: penalty % len(order)]:
        shares[seat] += 1
    return shares


# ---------------------------------------------------------------------------------------------
# The `thirteen score` line


def score_round(round_: object) -> dict[str, Any]:
    """Score one parsed input object of ``thirteen score``; raises OracleError on bad input."""
    if not isinstance(round_, dict):
        raise OracleError("a round must be a JSON object")
    rules = parse_ruleset(round_.get("ruleset"))
    base = round_.get("base")
    if base is not None and (not _is_int(base) or base < 0):
        raise OracleError("base must be an integer >= 0")
    entries = round_.get("players")
    if not isinstance(entries, list) or not 2 <= len(entries) <= 4:
        raise OracleError("a round needs 2 to 4 players")  # R10.1
    seats = [_parse_seat(entry, rules) for entry in entries]
    if len({seat.id for seat in seats}) != len(seats):
        raise OracleError("player ids must be distinct")
    all_cards = [card for seat in seats for card in seat.cards]
    if len(set(all_cards)) != len(all_cards):
        raise OracleError("a card is dealt to two players")

    pairs = showdown(seats, rules)
    totals = [0] * len(seats)
    for pair in pairs:
        totals[pair.a] += pair.points
        totals[pair.b] -= pair.points
    players: list[dict[str, Any]] = [
        {"id": seat.id, "points": total, "foul": seat.foul, "special": seat.special}
        for seat, total in zip(seats, totals, strict=True)
    ]
    if base is not None:
        gross = [total * base for total in totals]
        balances = [seat.balance for seat in seats]
        coins = gross
        if all(balance is not None for balance in balances):
            coins = settle(gross, [b for b in balances if b is not None])
        for player, amount in zip(players, coins, strict=True):
            player["coins"] = amount
    return {
        "players": players,
        "pairs": [
            {
                "a": seats[pair.a].id,
                "b": seats[pair.b].id,
                "points": pair.points,
                "piles": pair.piles,
                "scoop": pair.scooper is not None,
                "home_run": pair.home_run,
                "explanation": "oracle",
            }
            for pair in pairs
        ],
    }


def score_line(line: str) -> dict[str, Any]:
    """What ``thirteen score`` must print for one input line."""
    try:
        return score_round(json.loads(line))
    except json.JSONDecodeError as error:
        return {"error": f"malformed JSON: {error}"}
    except OracleError as error:
        return {"error": str(error)}


# ---------------------------------------------------------------------------------------------
# R12 provably fair deal


def commitment(server_seed: bytes) -> str:
    """R12.1: hex SHA-256 of the seed bytes."""
    return hashlib.sha256(server_seed).hexdigest()


def _words(server_seed: bytes, client_seed: str, round_id: str) -> Iterator[int]:
    """R12.3: HMAC-SHA256 blocks, eight big-endian 32-bit words each."""
    for counter in itertools.count():
        message = f"{client_seed}:{round_id}:{counter}".encode()
        block = hmac.new(server_seed, message, hashlib.sha256).digest()
        for offset in range(0, 32, 4):
            yield int.from_bytes(block[offset : offset + 4], "big")


def shuffled_deck(server_seed: bytes, client_seed: str, round_id: str) -> list[Card]:
    """R12.4: Fisher-Yates from the canonical deck with rejection sampling."""
    deck = list(DECK)
    words = _words(server_seed, client_seed, round_id)
    for i in range(51, 0, -1):
        n = i + 1
        limit = 2**32 - (2**32 % n)
        word = next(words)
        while word >= limit:
            word = next(words)
        j = word % n
        deck[i], deck[j] = deck[j], deck[i]
    return deck


def deal(server_seed: bytes, client_seed: str, round_id: str, players: int) -> list[list[str]]:
    """R12.5: player k gets positions 13k … 13k+12."""
    deck = shuffled_deck(server_seed, client_seed, round_id)
    return [[card_text(card) for card in deck[13 * k : 13 * k + 13]] for k in range(players)]
