"""Rulesets: every parameter of the game as frozen data, with presets (R13, R14).

A ruleset is recorded in full when a table opens, so it round-trips through a plain dict:

>>> Ruleset.from_dict(FUJIAN.to_dict()) == FUJIAN
True
>>> STANDARD.with_overrides({"scoop_multiplier": 3}).scoop_multiplier
3

R14's parameters are recorded only where they differ from their defaults, so a ruleset recorded
before R14 reads with R14's defaults, and a ruleset of R13 is recorded as it always was:

>>> sorted(set(PUXIAN.to_dict()) - set(STANDARD.to_dict()))[:3]
['extra_specials', 'flush_pairs_first', 'group_kickers']
>>> Ruleset.from_dict(PUXIAN6.to_dict()) == PUXIAN6
True

A new table's ruleset must also keep within ``domain.rules.limits`` (``strict``); a stored one is
read back as it was recorded, so that a store written before a limit existed still loads:

>>> resolve({"scoop_multiplier": 1000}, strict=True)
Traceback (most recent call last):
...
domain.errors.RulesetError: ruleset scoop_multiplier: expected an integer from 1 to 4, got 1000
>>> Ruleset.from_dict(STANDARD.to_dict() | {"scoop_multiplier": 1000}).scoop_multiplier
1000
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache
from typing import Any

from domain.errors import MAX_QUOTED, RuleError, RulesetError, quoted
from domain.rules import limits, putian
from domain.rules.cards import Card, deck_copies, deck_of
from domain.rules.hands import Category, PileOrder
from domain.rules.parameters import (
    PARSERS,
    PILES,
    R14_DEFAULTS,
    STRICT_RANGES,
    PileBonuses,
    SpecialPoints,
    recorded,
)
from domain.rules.specials import BASE_SPECIALS, Counting, Special


@dataclass(frozen=True)
class Ruleset:
    """R13: a named, complete set of parameters; R14: the regional variants. Defaults are the
    ``standard`` preset."""

    name: str = "standard"
    wheel: str = "second"  # R2.3
    scoop_multiplier: int = 2  # R6.2
    home_run_multiplier: int = 2  # R6.7
    home_run_min_players: int = 4  # R6.7
    foul_counts_for_home_run: bool = True  # R6.7
    pile_bonuses: PileBonuses = ()  # R6.1: per pile, the worth of a won pile by category
    special_points: SpecialPoints = field(
        default_factory=lambda: tuple((s, s.default_points) for s in BASE_SPECIALS)
    )  # R5.1; R14.5.4: a special absent from it cannot be declared
    quad_counts_as_two_pairs: bool = False  # R5.1 row 12
    seat_minimum: int = 48  # R8.1
    stake_policy: str = "by_balance"  # R8.3
    base_stake: int = 1  # R8.3: the table's one base when stake_policy is fixed
    escape_penalty_multiple: int = 25  # R11.1
    arrange_seconds: int = 60  # R10.2
    horse_card: Card | None = None  # R14.1.1; public with the ruleset, R14.1.6
    horse_multiplier: int = 2  # R14.1.1
    horse_both_holders: str = "cancel"  # R14.1.1, R14.1.3
    max_players: int = 4  # R14.2.1
    extra_suits: str = ""  # R14.2.2: suit letters in order, "dc"
    group_kickers: bool = True  # R14.3.3
    flush_pairs_first: bool = False  # R14.3.4
    special_counting: str = "exact"  # R14.4.1
    extra_specials: tuple[Special, ...] = ()  # R14.4.3
    roll_over_counts_as_scoop: bool = True  # R14.5.1
    scoop_bonus: int = 0  # R14.5.2
    special_order: str = "table"  # R14.5.3

    @cached_property
    def _worth(self) -> tuple[dict[Category, int], ...]:
        tables = dict(self.pile_bonuses)
        return tuple(dict(tables.get(pile, ())) for pile in PILES)

    @cached_property
    def _points(self) -> dict[Special, int]:
        return dict(self.special_points)

    def pile_worth(self, pile: int, category: Category) -> int:
        """R6.1: what winning pile ``pile`` (0 front, 1 middle, 2 back) is worth to ``category``
        (R14.3.2: a five_of_a_kind not listed is worth 1, as any other)."""
        return self._worth[pile].get(category, 1)

    def points_of(self, special: Special) -> int:
        """R5.1 (or this ruleset's override, R14.5.4): the points a special hand scores; an
        extra special (R14.4.3) not in the map scores its default, 20."""
        return self._points.get(special, special.default_points)

    @cached_property
    def specials(self) -> tuple[Special, ...]:
        """The specials a player may declare, strongest first (R5.2): R5.1's that
        ``special_points`` lists (R14.5.4) and the enabled extra ones (R14.4.3)."""
        return tuple(
            s
            for s in Special
            if (s in self._points and s in BASE_SPECIALS) or s in self.extra_specials
        )

    @property
    def pile_order(self) -> PileOrder:
        """R2.3, R14.3.3, R14.3.4: what orders piles."""
        return PileOrder(self.wheel, self.group_kickers, self.flush_pairs_first)

    @property
    def counting(self) -> Counting:
        """R5.1, R14.4.1: how the group patterns count."""
        return Counting(self.quad_counts_as_two_pairs, self.special_counting)

    @cached_property
    def deck(self) -> tuple[Card, ...]:
        """R14.2.3: the N = 52 + 13 × len(extra_suits) cards, in the shuffle's starting order."""
        return deck_of(self.extra_suits)

    @cached_property
    def copies(self) -> dict[Card, int]:
        """R14.2.3: how many copies of each card the deck holds (1, or 2 or 3 with extra
        suits)."""
        return deck_copies(self.extra_suits)

    def holds_horse(self, cards: Sequence[Card]) -> bool:
        """R14.1.2: whether 13 dealt cards hold the horse card (two copies count once)."""
        return self.horse_card is not None and self.horse_card in cards

    def horse_factor(self, a_holds: bool, b_holds: bool) -> int:
        """R14.1.3: what a pair's points are multiplied by (R14.1.4)."""
        if a_holds and b_holds:
            return self.horse_multiplier**2 if self.horse_both_holders == "stack" else 1
        return self.horse_multiplier if a_holds or b_holds else 1

    @property
    def max_horse_factor(self) -> int:
        """R14.1.3: the largest horse factor a pair can have under these rules."""
        if self.horse_card is None:
            return 1
        stacked = self.horse_both_holders == "stack" and self.copies[self.horse_card] > 1
        return self.horse_multiplier**2 if stacked else self.horse_multiplier

    @property
    def max_round_points(self) -> int:
        """R6, R14: the most points one player can win or lose in a round under these rules.

        Against each of at most ``max_players`` − 1 opponents (R10.1, R14.2.1) a pair is worth
        at most the larger of the best special hand's points (R6.5, R6.6: no multiplier but the
        horse) and every pile won at its best worth (R6.1, R6.3), scooped (R6.2, with the scoop
        bonus, R14.5.2), with the horse (R14.1.3) and a home run (R6.7), in R14.5.6's order;
        R6.8 adds the pairs up.

        >>> STANDARD.max_round_points, FUJIAN.max_round_points  # 3 × a supreme dragon's 108
        (324, 324)
        >>> FUJIAN.with_overrides({"special_points": {"supreme_dragon": 10}}).max_round_points
        216
        >>> PUXIAN.max_round_points, PUXIAN5.max_round_points, PUXIAN6.max_round_points
        (792, 1056, 1320)
        """
        piles = sum(max([1, *self._worth[pile].values()]) for pile in range(len(PILES)))
        horse = self.max_horse_factor
        scoop = piles * self.scoop_multiplier + self.scoop_bonus
        normal = scoop * horse * self.home_run_multiplier
        special = max([0, *(self.points_of(s) for s in self.specials)]) * horse
        return (self.max_players - 1) * max(normal, special)

    def limit_violation(self) -> tuple[str, str] | None:
        """The first parameter out of its range for a new table (``domain.rules.limits``,
        R14.5.4, R14.5.5), as (field, message), or None. Checked for a new table only; a stored
        ruleset loads whatever it holds."""
        for key, (minimum, maximum) in STRICT_RANGES.items():
            value = getattr(self, key)
            if not minimum <= value <= maximum:
                return f"ruleset.{key}", (
                    f"ruleset {key}: expected an integer from {minimum} to {maximum:,}, "
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
            if not 1 <= points <= limits.MAX_SPECIAL_POINTS:
                return "ruleset.special_points", (
                    f"ruleset special_points: {special.id} scores {quoted(points)}, outside "
                    f"1 to the limit of {limits.MAX_SPECIAL_POINTS} (R14.5.4)"
                )
        if self.max_round_points > limits.MAX_ROUND_POINTS:
            return "ruleset", (
                f"ruleset: a player could win or lose {self.max_round_points:,} points in a "
                f"round, above the limit of {limits.MAX_ROUND_POINTS:,}; lower pile_bonuses, "
                "scoop_multiplier, home_run_multiplier, horse_multiplier or max_players"
            )
        need = self.seat_minimum * self.base_stake
        if self.stake_policy == "fixed" and need > limits.MAX_BALANCE:
            return "ruleset.base_stake", (
                f"ruleset base_stake: a fixed base of {self.base_stake:,} needs "
                f"{need:,} coins to sit down (R8.3), above the {limits.MAX_BALANCE:,} a "
                "wallet may hold"
            )
        return None

    def variants(self) -> dict[str, Any]:
        """The R14 parameters this ruleset changes from their defaults, as recorded."""
        return {
            key: recorded(key, getattr(self, key))
            for key, default in R14_DEFAULTS.items()
            if getattr(self, key) != default
        }

    def to_dict(self) -> dict[str, Any]:
        """Every R13 parameter, and the R14 ones that differ from their defaults, as plain
        JSON-ready data (stored in events, R13, R14): a copy of its own for every caller (each
        deal records it), of what is computed once per ruleset."""
        data: dict[str, Any] = _copied(self._dict)
        return data

    @cached_property
    def _dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in R14_DEFAULTS
        }
        data["pile_bonuses"] = {
            pile: {c.id: v for c, v in table} for pile, table in self.pile_bonuses
        }
        # R14.5.4: a special of R5.1 taken out of the map is recorded as null, so that it
        # stays out when read back; R13's rulesets list them all, as they always did
        points = self._points
        data["special_points"] = {
            s.id: points.get(s) for s in Special if s in points or s in BASE_SPECIALS
        }
        return data | self.variants()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ruleset:
        """A complete ruleset from ``to_dict`` output; any missing R13 parameter is an error,
        a missing R14 one has its default (a ruleset recorded before R14)."""
        missing = [f.name for f in fields(cls) if f.name not in data and f.name not in R14_DEFAULTS]
        if missing:
            raise RulesetError(f"ruleset is missing parameters: {', '.join(missing)}")
        return _from_json(json.dumps(data, sort_keys=True))

    def with_overrides(self, overrides: Mapping[str, Any], *, strict: bool = False) -> Ruleset:
        """This ruleset with parameters replaced one by one, each validated (R13, R14). With
        ``strict`` (a new table) the result must also keep within ``domain.rules.limits``."""
        if not isinstance(overrides, Mapping):
            raise RulesetError("a ruleset must be a preset name or an object of parameters")
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            parse = PARSERS.get(key)
            if parse is None:
                short = isinstance(key, str) and len(key) <= MAX_QUOTED
                raise RulesetError(
                    f"unknown ruleset parameter {quoted(key, 20)}; the parameters are those "
                    "of R13 and R14 (docs/rules.md), e.g. scoop_multiplier, horse_card",
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
        result.check_deck()
        violation = result.limit_violation() if strict else None
        if violation is not None:
            raise RulesetError(violation[1], field=violation[0])
        return result

    def check_deck(self) -> None:
        """R14.2.2: the deck must hold 13 cards for each of ``max_players`` players."""
        cards = len(self.deck)
        if 13 * self.max_players > cards:
            need = (13 * self.max_players - 52 + 12) // 13
            raise RulesetError(
                f"ruleset max_players: {self.max_players} players need "
                f"{13 * self.max_players} cards and the deck has {cards}; list {need} "
                f"extra_suits (R14.2.2)",
                field="ruleset.max_players",
            )


def _copied(value: Any) -> Any:
    """``value`` with every dict and list in it copied (its scalars, tuples and enums are
    immutable, and shared)."""
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    if kind is list:
        return [_copied(v) for v in value]
    return value


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

PUXIAN = STANDARD.with_overrides(putian.PUXIAN)
"""R14.6 ``puxian``: the Putian (莆仙) tables' rules for four players."""

PUXIAN5 = PUXIAN.with_overrides(putian.FIVE_SEATS)
"""R14.6 ``puxian5``: ``puxian`` for five players, with a second suit of diamonds."""

PUXIAN6 = PUXIAN.with_overrides(putian.SIX_SEATS)
"""R14.6 ``puxian6``: ``puxian`` for six players, with second diamonds and clubs."""

PRESETS = {"standard": STANDARD, "fujian": FUJIAN}
"""R13's presets."""

VARIANT_PRESETS = {"puxian": PUXIAN, "puxian5": PUXIAN5, "puxian6": PUXIAN6}
"""R14.6's presets."""

ALL_PRESETS = PRESETS | VARIANT_PRESETS


def resolve(spec: str | Mapping[str, Any] | None, *, strict: bool = False) -> Ruleset:
    """A preset name, or an object of overrides on ``standard`` (or on its ``preset`` key).
    With ``strict`` (a new table) within ``domain.rules.limits`` too; offline scoring need not
    be."""
    if spec is None:
        return STANDARD
    if isinstance(spec, str):
        if spec not in ALL_PRESETS:
            raise RulesetError(
                f"unknown ruleset {quoted(spec)}; presets: {', '.join(ALL_PRESETS)}",
                field="ruleset",
            )
        return ALL_PRESETS[spec]
    if not isinstance(spec, Mapping):
        raise RulesetError(
            "ruleset must be a preset name or an object of parameters", field="ruleset"
        )
    overrides = dict(spec)
    base = resolve(overrides.pop("preset", "standard"), strict=strict)
    return base.with_overrides(overrides, strict=strict)
