"""Rulesets: every parameter of the game as frozen data, with presets (R13).

A ruleset is recorded in full when a table opens, so it round-trips through a plain dict:

>>> Ruleset.from_dict(FUJIAN.to_dict()) == FUJIAN
True
>>> STANDARD.with_overrides({"scoop_multiplier": 3}).scoop_multiplier
3
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from typing import Any

from domain.errors import RuleError, RulesetError
from domain.hands import WHEELS, Category
from domain.specials import Special

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

    def with_overrides(self, overrides: Mapping[str, Any]) -> Ruleset:
        """This ruleset with parameters replaced one by one, each validated (R13)."""
        if not isinstance(overrides, Mapping):
            raise RulesetError("a ruleset must be a preset name or an object of parameters")
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            parse = _PARSERS.get(key)
            if parse is None:
                known = ", ".join(sorted(_PARSERS))
                raise RulesetError(
                    f"unknown ruleset parameter {key!r}; known: {known}", field=f"ruleset.{key}"
                )
            try:
                changes[key] = parse(value, self)
            except RuleError as error:
                raise RulesetError(
                    f"ruleset {key}: {error.message}", field=f"ruleset.{key}"
                ) from None
        if "name" not in changes and changes:
            changes["name"] = "custom"
        return replace(self, **changes)


def _int(minimum: int) -> Any:
    def parse(value: Any, _: Ruleset) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise RulesetError(f"expected an integer >= {minimum}, got {value!r}")
        return value

    return parse


def _bool(value: Any, _: Ruleset) -> bool:
    if not isinstance(value, bool):
        raise RulesetError(f"expected true or false, got {value!r}")
    return value


def _choice(options: tuple[str, ...]) -> Any:
    def parse(value: Any, _: Ruleset) -> str:
        if value not in options:
            raise RulesetError(f"expected one of {', '.join(options)}, got {value!r}")
        return str(value)

    return parse


def _name(value: Any, _: Ruleset) -> str:
    if not isinstance(value, str) or not value:
        raise RulesetError(f"expected a non-empty name, got {value!r}")
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
                raise RulesetError(f"{pile}: unknown category {ident!r}") from None
            if pile == "front" and category.id not in ("three_of_a_kind", "pair", "high_card"):
                raise RulesetError(f"a front cannot be a {category.words}")
            if isinstance(worth, bool) or not isinstance(worth, int) or worth < 1:
                raise RulesetError(f"{pile}.{ident}: expected an integer >= 1")
            entries.append((category, worth))
        if entries:
            tables.append((pile, tuple(sorted(entries))))
    unknown = set(value) - set(PILES)
    if unknown:
        raise RulesetError(f"unknown pile {sorted(unknown)[0]!r}; piles are front, middle, back")
    return tuple(tables)


def _special_points(value: Any, base: Ruleset) -> tuple[tuple[Special, int], ...]:
    """R5.1 points, overridden special by special."""
    if not isinstance(value, Mapping):
        raise RulesetError("expected an object of special ids")
    points = dict(base.special_points)
    for ident, worth in value.items():
        special = Special.from_id(ident)
        if isinstance(worth, bool) or not isinstance(worth, int) or worth < 0:
            raise RulesetError(f"{ident}: expected an integer >= 0")
        points[special] = worth
    return tuple((s, points[s]) for s in Special)


_PARSERS: dict[str, Any] = {
    "name": _name,
    "wheel": _choice(WHEELS),
    "scoop_multiplier": _int(1),
    "home_run_multiplier": _int(1),
    "home_run_min_players": _int(2),
    "foul_counts_for_home_run": _bool,
    "pile_bonuses": _pile_bonuses,
    "special_points": _special_points,
    "quad_counts_as_two_pairs": _bool,
    "seat_minimum": _int(1),
    "stake_policy": _choice(STAKE_POLICIES),
    "base_stake": _int(1),
    "escape_penalty_multiple": _int(0),
    "arrange_seconds": _int(1),
}


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


def resolve(spec: str | Mapping[str, Any] | None) -> Ruleset:
    """A preset name, or an object of overrides on ``standard`` (or on its ``preset`` key)."""
    if spec is None:
        return STANDARD
    if isinstance(spec, str):
        if spec not in PRESETS:
            raise RulesetError(
                f"unknown ruleset {spec!r}; presets: {', '.join(PRESETS)}", field="ruleset"
            )
        return PRESETS[spec]
    if not isinstance(spec, Mapping):
        raise RulesetError(
            "ruleset must be a preset name or an object of parameters", field="ruleset"
        )
    overrides = dict(spec)
    base = resolve(overrides.pop("preset", "standard"))
    return base.with_overrides(overrides)
