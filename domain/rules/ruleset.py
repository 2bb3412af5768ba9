"""Rulesets: every parameter of the game as frozen data, with presets (R13).

A ruleset is recorded in full when a table opens, so it round-trips through a plain dict:

>>> Ruleset.from_dict(FUJIAN.to_dict()) == FUJIAN
True
>>> STANDARD.with_overrides({"scoop_multiplier": 3}).scoop_multiplier
3

A new table's ruleset must also keep within ``domain.rules.limits`` (``strict``); a stored one is
read back as it was recorded, so that a store written before a limit existed still loads:

>>> resolve({"scoop_multiplier": 1000}, strict=True)
Traceback (most recent call last):
...
domain.errors.RulesetError: ruleset scoop_multiplier: expected an integer from 1 to 10, got 1000
>>> Ruleset.from_dict(STANDARD.to_dict() | {"scoop_multiplier": 1000}).scoop_multiplier
1000
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from typing import Any

from domain.errors import MAX_QUOTED, RuleError, RulesetError, SpecialError, quoted
from domain.rules import limits
from domain.rules.hands import WHEELS, Category
from domain.rules.specials import Special

PILES = ("front", "middle", "back")
STAKE_POLICIES = ("by_balance", "fixed")

PileBonuses = tuple[tuple[str, tuple[tuple[Category, int], ...]], ...]


@dataclass(frozen=True)
class Ruleset:
    """R13: a named, complete set of parameters. Defaults are the ``standard`` preset."""

    name: str = "standard"
    wheel: str = "second"  # R2.3
    scoop_multiplier: int = 2  # R6.2
    home_run_multiplier: int = 2  # R6.7
    home_run_min_players: int = 4  # R6.7
    foul_counts_for_home_run: bool = True  # R6.7
    pile_bonuses: PileBonuses = ()  # R6.1: per pile, the worth of a won pile by category
    special_points: tuple[tuple[Special, int], ...] = field(
        default_factory=lambda: tuple((s, s.default_points) for s in Special)
    )  # R5.1
    quad_counts_as_two_pairs: bool = False  # R5.1 row 12
    seat_minimum: int = 48  # R8.1
    stake_policy: str = "by_balance"  # R8.3
    base_stake: int = 1  # R8.3: the table's one base when stake_policy is fixed
    escape_penalty_multiple: int = 25  # R11.1
    arrange_seconds: int = 60  # R10.2

    @cached_property
    def _worth(self) -> tuple[dict[Category, int], ...]:
        tables = dict(self.pile_bonuses)
        return tuple(dict(tables.get(pile, ())) for pile in PILES)

    @cached_property
    def _points(self) -> dict[Special, int]:
        return dict(self.special_points)

    def pile_worth(self, pile: int, category: Category) -> int:
        """R6.1: what winning pile ``pile`` (0 front, 1 middle, 2 back) is worth to ``category``."""
        return self._worth[pile].get(category, 1)

    def points_of(self, special: Special) -> int:
        """R5.1 (or this ruleset's override): the points a special hand scores."""
        return self._points[special]

    @property
    def max_round_points(self) -> int:
        """R6: the most points one player can win or lose in a round under these rules.

        Against each of at most three opponents (R10.1) a pair is worth at most the larger of
        the best special hand's points (R6.5, R6.6: no multiplier) and every pile won at its
        best worth (R6.1, R6.3), scooped (R6.2) and a home run (R6.7); R6.8 adds the pairs up.

        >>> STANDARD.max_round_points, FUJIAN.max_round_points  # 3 × a supreme dragon's 108
        (324, 324)
        >>> FUJIAN.with_overrides({"special_points": {"supreme_dragon": 10}}).max_round_points
        216
        """
        piles = sum(max([1, *self._worth[pile].values()]) for pile in range(len(PILES)))
        normal = piles * self.scoop_multiplier * self.home_run_multiplier
        special = max(points for _, points in self.special_points)
        return limits.OPPONENTS * max(normal, special)

    def limit_violation(self) -> tuple[str, str] | None:
        """The first parameter above its limit (``domain.rules.limits``), as (field, message), or
        None. Checked for a new table only; a stored ruleset loads whatever it holds."""
        for name, maximum in _MAXIMA.items():
            value = getattr(self, name)
            if value > maximum:
                minimum = _MINIMA[name]
                return f"ruleset.{name}", (
                    f"ruleset {name}: expected an integer from {minimum} to {maximum:,}, "
                    f"got {quoted(value)}"
                )
        if len(self.name) > limits.MAX_RULESET_NAME or not self.name.isprintable():
            return "ruleset.name", (
                f"ruleset name: expected at most {limits.MAX_RULESET_NAME} printable "
                f"characters, got {quoted(self.name)}"
            )
        for pile, table in self.pile_bonuses:
            for category, worth in table:
                if worth > limits.MAX_PILE_WORTH:
                    return "ruleset.pile_bonuses", (
                        f"ruleset pile_bonuses: {pile}.{category.id} is worth {quoted(worth)}, "
                        f"above the limit of {limits.MAX_PILE_WORTH}"
                    )
        for special, points in self.special_points:
            if points > limits.MAX_SPECIAL_POINTS:
                return "ruleset.special_points", (
                    f"ruleset special_points: {special.id} scores {quoted(points)}, above the "
                    f"limit of {limits.MAX_SPECIAL_POINTS}"
                )
        if self.max_round_points > limits.MAX_ROUND_POINTS:
            return "ruleset", (
                f"ruleset: a player could win or lose {self.max_round_points:,} points in a "
                f"round, above the limit of {limits.MAX_ROUND_POINTS:,}; lower pile_bonuses, "
                "scoop_multiplier or home_run_multiplier"
            )
        need = self.seat_minimum * self.base_stake
        if self.stake_policy == "fixed" and need > limits.MAX_BALANCE:
            return "ruleset.base_stake", (
                f"ruleset base_stake: a fixed base of {self.base_stake:,} needs "
                f"{need:,} coins to sit down (R8.3), above the {limits.MAX_BALANCE:,} a "
                "wallet may hold"
            )
        return None

    def to_dict(self) -> dict[str, Any]:
        """Every parameter as plain JSON-ready data (stored in events, R13)."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["pile_bonuses"] = {
            pile: {c.id: v for c, v in table} for pile, table in self.pile_bonuses
        }
        data["special_points"] = {s.id: v for s, v in self.special_points}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ruleset:
        """A complete ruleset from ``to_dict`` output; any missing parameter is an error."""
        missing = [f.name for f in fields(cls) if f.name not in data]
        if missing:
            raise RulesetError(f"ruleset is missing parameters: {', '.join(missing)}")
        return _from_json(json.dumps(data, sort_keys=True))

    def with_overrides(self, overrides: Mapping[str, Any], *, strict: bool = False) -> Ruleset:
        """This ruleset with parameters replaced one by one, each validated (R13). With
        ``strict`` (a new table) the result must also keep within ``domain.rules.limits``."""
        if not isinstance(overrides, Mapping):
            raise RulesetError("a ruleset must be a preset name or an object of parameters")
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            parse = _PARSERS.get(key)
            if parse is None:
                known = ", ".join(sorted(_PARSERS))
                short = isinstance(key, str) and len(key) <= MAX_QUOTED
                raise RulesetError(
                    f"unknown ruleset parameter {quoted(key, 20)}; known: {known}",
                    field=f"ruleset.{key}" if short else "ruleset",
                )
            try:
                changes[key] = parse(value, self)
            except RuleError as error:
                raise RulesetError(
                    f"ruleset {key}: {error.message}", field=f"ruleset.{key}"
                ) from None
        if "name" not in changes and changes:
            changes["name"] = "custom"
        result = replace(self, **changes)
        violation = result.limit_violation() if strict else None
        if violation is not None:
            raise RulesetError(violation[1], field=violation[0])
        return result


def _int(minimum: int) -> Any:
    def parse(value: Any, _: Ruleset) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise RulesetError(f"expected an integer >= {minimum}, got {quoted(value)}")
        return value

    return parse


def _bool(value: Any, _: Ruleset) -> bool:
    if not isinstance(value, bool):
        raise RulesetError(f"expected true or false, got {quoted(value)}")
    return value


def _choice(options: tuple[str, ...]) -> Any:
    def parse(value: Any, _: Ruleset) -> str:
        if not isinstance(value, str) or value not in options:
            raise RulesetError(f"expected one of {', '.join(options)}, got {quoted(value)}")
        return value

    return parse


def _name(value: Any, _: Ruleset) -> str:
    if not isinstance(value, str) or not value:
        raise RulesetError(f"expected a non-empty name, got {quoted(value)}")
    return value


def _pile_bonuses(value: Any, _: Ruleset) -> PileBonuses:
    """R6.1: ``{"front": {"three_of_a_kind": 3}, ...}``; replaces the whole table."""
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
            except KeyError:
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


def _special_points(value: Any, base: Ruleset) -> tuple[tuple[Special, int], ...]:
    """R5.1 points, overridden special by special."""
    if not isinstance(value, Mapping):
        raise RulesetError("expected an object of special ids")
    points = dict(base.special_points)
    for ident, worth in value.items():
        try:
            special = Special.from_id(ident)
        except SpecialError:
            known = ", ".join(s.id for s in Special)
            raise RulesetError(f"unknown special {quoted(ident, 20)}; known: {known}") from None
        if isinstance(worth, bool) or not isinstance(worth, int) or worth < 0:
            raise RulesetError(f"{special.id}: expected an integer >= 0")
        points[special] = worth
    return tuple((s, points[s]) for s in Special)


_MINIMA = {
    "scoop_multiplier": 1,
    "home_run_multiplier": 1,
    "home_run_min_players": 2,
    "seat_minimum": 1,
    "base_stake": 1,
    "escape_penalty_multiple": 0,
    "arrange_seconds": 1,
}
_MAXIMA = {
    "scoop_multiplier": limits.MAX_MULTIPLIER,
    "home_run_multiplier": limits.MAX_MULTIPLIER,
    "home_run_min_players": limits.MAX_HOME_RUN_MIN_PLAYERS,
    "seat_minimum": limits.MAX_BALANCE,
    "base_stake": limits.MAX_BALANCE,
    "escape_penalty_multiple": limits.MAX_ESCAPE_MULTIPLE,
    "arrange_seconds": limits.MAX_ARRANGE_SECONDS,
}
"""Upper bounds for a new table (``domain.rules.limits`` says why each is safe); a stored ruleset is
read back as recorded, so only ``strict`` validation applies them."""

_PARSERS: dict[str, Any] = {
    "name": _name,
    "wheel": _choice(WHEELS),
    "foul_counts_for_home_run": _bool,
    "pile_bonuses": _pile_bonuses,
    "special_points": _special_points,
    "quad_counts_as_two_pairs": _bool,
    "stake_policy": _choice(STAKE_POLICIES),
} | {name: _int(minimum) for name, minimum in _MINIMA.items()}


@lru_cache(maxsize=256)
def _from_json(text: str) -> Ruleset:
    """Every stored round carries its ruleset; tables share a few, so parse each once."""
    return STANDARD.with_overrides(json.loads(text))


STANDARD = Ruleset()
"""R13 ``standard``: the seed's rules."""

FUJIAN = STANDARD.with_overrides(
    {
        "name": "fujian",
        "pile_bonuses": {
            "front": {"three_of_a_kind": 3},
            "middle": {"full_house": 2, "four_of_a_kind": 8, "straight_flush": 10},
            "back": {"four_of_a_kind": 4, "straight_flush": 5},
        },
    }
)
"""R13 ``fujian``: ``standard`` with pile bonuses."""

PRESETS = {"standard": STANDARD, "fujian": FUJIAN}


def resolve(spec: str | Mapping[str, Any] | None, *, strict: bool = False) -> Ruleset:
    """A preset name, or an object of overrides on ``standard`` (or on its ``preset`` key).
    With ``strict`` (a new table) within ``domain.rules.limits`` too; offline scoring need not
    be."""
    if spec is None:
        return STANDARD
    if isinstance(spec, str):
        if spec not in PRESETS:
            raise RulesetError(
                f"unknown ruleset {quoted(spec)}; presets: {', '.join(PRESETS)}", field="ruleset"
            )
        return PRESETS[spec]
    if not isinstance(spec, Mapping):
        raise RulesetError(
            "ruleset must be a preset name or an object of parameters", field="ruleset"
        )
    overrides = dict(spec)
    base = resolve(overrides.pop("preset", "standard"), strict=strict)
    return base.with_overrides(overrides, strict=strict)
