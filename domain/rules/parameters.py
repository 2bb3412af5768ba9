"""Each ruleset parameter's parser and range (R13, R14): what ``Ruleset.with_overrides`` accepts.

A parser takes the value as JSON gives it, and the ruleset it overrides, and returns the value
the ``Ruleset`` holds, or raises ``RulesetError`` saying what it expected. R14's parameters are
checked against their whole range wherever a ruleset is read (no store holds one out of range);
R13's keep their minimum only, and their maximum for a new table (``STRICT_RANGES``), so that a
store written before a limit still loads.

>>> PARSERS["extra_suits"](["d", "c"], None)
'dc'
>>> PARSERS["horse_multiplier"](5, None)
Traceback (most recent call last):
...
domain.errors.RulesetError: expected an integer from 2 to 4, got 5
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from domain.errors import CardError, RulesetError, SpecialError, quoted
from domain.rules import limits
from domain.rules.cards import SUITS, Card, parse_card
from domain.rules.hands import WHEELS, Category
from domain.rules.specials import EXTRA_SPECIALS, Special

PILES = ("front", "middle", "back")
STAKE_POLICIES = ("by_balance", "fixed")
HORSE_BOTH_HOLDERS = ("cancel", "stack")  # R14.1.1
SPECIAL_COUNTINGS = ("exact", "partition")  # R14.4.1
SPECIAL_ORDERS = ("table", "points")  # R14.5.3
NO_HORSE = "none"  # R14.1.1

PileBonuses = tuple[tuple[str, tuple[tuple[Category, int], ...]], ...]
SpecialPoints = tuple[tuple[Special, int], ...]
Parser = Callable[[Any, Any], Any]


def int_at_least(minimum: int) -> Parser:
    def parse(value: Any, _: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise RulesetError(f"expected an integer >= {minimum}, got {quoted(value)}")
        return value

    return parse


def int_between(minimum: int, maximum: int) -> Parser:
    def parse(value: Any, _: Any) -> int:
        ok = not isinstance(value, bool) and isinstance(value, int)
        if not ok or not minimum <= value <= maximum:
            raise RulesetError(
                f"expected an integer from {minimum} to {maximum}, got {quoted(value)}"
            )
        return int(value)

    return parse


def boolean(value: Any, _: Any) -> bool:
    if not isinstance(value, bool):
        raise RulesetError(f"expected true or false, got {quoted(value)}")
    return value


def choice(options: tuple[str, ...]) -> Parser:
    def parse(value: Any, _: Any) -> str:
        if not isinstance(value, str) or value not in options:
            raise RulesetError(f"expected one of {', '.join(options)}, got {quoted(value)}")
        return value

    return parse


def name(value: Any, _: Any) -> str:
    if not isinstance(value, str) or not value:
        raise RulesetError(f"expected a non-empty name, got {quoted(value)}")
    return value


def pile_bonuses(value: Any, _: Any) -> PileBonuses:
    """R6.1: ``{"front": {"three_of_a_kind": 3}, ...}``; replaces the whole table. A middle or
    back may name five_of_a_kind (R14.3.2)."""
    if not isinstance(value, Mapping):
        raise RulesetError("expected an object of piles (front, middle, back)")
    tables = []
    for pile in PILES:
        table = value.get(pile, {})
        if not isinstance(table, Mapping):
            raise RulesetError(f"{pile} must be an object of categories")
        entries = []
        for ident, worth in table.items():
            try:
                category = Category.from_id(ident)
            except (KeyError, AttributeError):
                raise RulesetError(f"{pile}: unknown category {quoted(ident)}") from None
            if pile == "front" and category.id not in ("three_of_a_kind", "pair", "high_card"):
                raise RulesetError(f"a front cannot be a {category.words}")
            if isinstance(worth, bool) or not isinstance(worth, int) or worth < 1:
                raise RulesetError(f"{pile}.{category.id}: expected an integer >= 1")
            entries.append((category, worth))
        if entries:
            tables.append((pile, tuple(sorted(entries))))
    unknown = [pile for pile in value if pile not in PILES]
    if unknown:
        raise RulesetError(f"unknown pile {quoted(unknown[0])}; piles are front, middle, back")
    return tuple(tables)


def special_points(value: Any, base: Any) -> SpecialPoints:
    """R5.1 points, overridden special by special; ``null`` takes a special of R5.1 out of the
    map, so it cannot be declared (R14.5.4). The extra specials (R14.4.3) may be given points
    too, but not ``null``: absent from the map they score 20, and ``extra_specials`` alone says
    whether they may be declared (a ``null`` would otherwise be dropped without a word)."""
    if not isinstance(value, Mapping):
        raise RulesetError("expected an object of special ids")
    points = dict(base.special_points)
    for ident, worth in value.items():
        try:
            special = Special.from_id(ident)
        except SpecialError:
            raise RulesetError(
                f"unknown special {quoted(ident, 20)}; the specials are those of R5.1 and "
                "R14.4.3, e.g. six_pairs"
            ) from None
        if worth is None:
            if special in EXTRA_SPECIALS:  # R14.4.3: enabled by extra_specials, worth 20 if absent
                raise RulesetError(
                    f"{special.id} cannot be taken out with null: it is an extra special "
                    "(R14.4.3), declarable exactly when extra_specials lists it"
                )
            points.pop(special, None)
            continue
        if isinstance(worth, bool) or not isinstance(worth, int) or worth < 0:
            raise RulesetError(f"{special.id}: expected an integer >= 0")
        points[special] = worth
    return tuple((s, points[s]) for s in Special if s in points)


def horse_card(value: Any, _: Any) -> Card | None:
    """R14.1.1: ``none`` or one card in R1.2's notation."""
    if value is None or value == NO_HORSE:
        return None
    try:
        return parse_card(value)
    except CardError:
        raise RulesetError(
            f"expected {NO_HORSE} or a card such as 8h, got {quoted(value)}"
        ) from None


def extra_suits(value: Any, _: Any) -> str:
    """R14.2.2: an ordered list of 0–2 distinct suits from c d h s, held as a string ("dc")."""
    items = list(value) if isinstance(value, (list, tuple, str)) else None
    if items is None or not all(isinstance(s, str) and s in SUITS for s in items):
        raise RulesetError(f"expected a list of suits from c d h s, got {quoted(value)}")
    if len(items) > 2 or len(set(items)) != len(items):
        raise RulesetError(f"expected at most two distinct suits, got {quoted(value)}")
    return "".join(items)


def extra_specials(value: Any, _: Any) -> tuple[Special, ...]:
    """R14.4.3: a subset of two_fives_one_trips and six_of_a_kind, in that order."""
    known = {s.id: s for s in EXTRA_SPECIALS}
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, str) and v in known for v in value
    ):
        raise RulesetError(f"expected a list from {', '.join(known)}, got {quoted(value)}")
    return tuple(s for s in EXTRA_SPECIALS if s.id in value)


R13_MINIMA = {
    "scoop_multiplier": 1,
    "home_run_multiplier": 1,
    "home_run_min_players": 2,
    "seat_minimum": 1,
    "base_stake": 1,
    "escape_penalty_multiple": 0,
    "arrange_seconds": 1,
}

STRICT_RANGES = {
    "scoop_multiplier": (1, limits.MAX_MULTIPLIER),  # R14.5.5
    "home_run_multiplier": (1, limits.MAX_MULTIPLIER),  # R14.5.5
    "home_run_min_players": (3, limits.MAX_PLAYERS),  # R14.5.5
    "seat_minimum": (1, limits.MAX_BALANCE),
    "base_stake": (1, limits.MAX_BALANCE),
    "escape_penalty_multiple": (0, limits.MAX_ESCAPE_MULTIPLE),
    "arrange_seconds": (1, limits.MAX_ARRANGE_SECONDS),
}
"""R13's integers for a new table (``domain.rules.limits`` says why each bound is safe); a stored
ruleset is read back as recorded, so only ``strict`` validation applies them."""

R14_DEFAULTS: dict[str, Any] = {
    "horse_card": None,
    "horse_multiplier": 2,
    "horse_both_holders": "cancel",
    "max_players": 4,
    "extra_suits": "",
    "group_kickers": True,
    "flush_pairs_first": False,
    "special_counting": "exact",
    "extra_specials": (),
    "roll_over_counts_as_scoop": True,
    "scoop_bonus": 0,
    "special_order": "table",
}
"""R14: every variant parameter with the default that keeps R1–R13 as they are. A ruleset records
only those it changes, so a ruleset recorded before R14 reads the same and records the same."""

PARSERS: dict[str, Parser] = {
    "name": name,
    "wheel": choice(WHEELS),
    "foul_counts_for_home_run": boolean,
    "pile_bonuses": pile_bonuses,
    "special_points": special_points,
    "quad_counts_as_two_pairs": boolean,
    "stake_policy": choice(STAKE_POLICIES),
    **{key: int_at_least(minimum) for key, minimum in R13_MINIMA.items()},
    "horse_card": horse_card,
    "horse_multiplier": int_between(2, limits.MAX_HORSE_MULTIPLIER),
    "horse_both_holders": choice(HORSE_BOTH_HOLDERS),
    "max_players": int_between(2, limits.MAX_PLAYERS),
    "extra_suits": extra_suits,
    "group_kickers": boolean,
    "flush_pairs_first": boolean,
    "special_counting": choice(SPECIAL_COUNTINGS),
    "extra_specials": extra_specials,
    "roll_over_counts_as_scoop": boolean,
    "scoop_bonus": int_between(0, limits.MAX_SCOOP_BONUS),
    "special_order": choice(SPECIAL_ORDERS),
}


def recorded(key: str, value: Any) -> Any:
    """An R14 parameter's value as a ruleset records it (JSON-ready)."""
    if key == "horse_card":
        return NO_HORSE if value is None else str(value)
    if key == "extra_suits":
        return list(value)
    if key == "extra_specials":
        return [s.id for s in value]
    return value
