"""R13: rulesets as frozen data with presets."""

import copy
import dataclasses
from typing import Any

import pytest

from domain.errors import RulesetError
from domain.rules.hands import Category
from domain.rules.ruleset import FUJIAN, PRESETS, STANDARD, Ruleset, resolve
from domain.rules.specials import Special


def test_r13_standard_preset_matches_the_table() -> None:
    assert (
        STANDARD.wheel,
        STANDARD.scoop_multiplier,
        STANDARD.home_run_multiplier,
        STANDARD.home_run_min_players,
        STANDARD.foul_counts_for_home_run,
        STANDARD.pile_bonuses,
        STANDARD.quad_counts_as_two_pairs,
        STANDARD.seat_minimum,
        STANDARD.stake_policy,
        STANDARD.escape_penalty_multiple,
        STANDARD.arrange_seconds,
    ) == ("second", 2, 2, 4, True, (), False, 48, "by_balance", 25, 60)
    assert all(STANDARD.points_of(s) == s.default_points for s in Special)


def test_r13_fujian_preset_has_the_pile_bonuses() -> None:
    worth = {(pile, c): FUJIAN.pile_worth(pile, c) for pile in range(3) for c in Category}
    assert worth[(0, Category.THREE_OF_A_KIND)] == 3
    assert worth[(1, Category.FULL_HOUSE)] == 2
    assert worth[(1, Category.FOUR_OF_A_KIND)] == 8
    assert worth[(1, Category.STRAIGHT_FLUSH)] == 10
    assert worth[(2, Category.FOUR_OF_A_KIND)] == 4
    assert worth[(2, Category.STRAIGHT_FLUSH)] == 5
    assert sum(1 for v in worth.values() if v != 1) == 6
    assert FUJIAN.to_dict() | {"name": "x", "pile_bonuses": {}} == STANDARD.to_dict() | {
        "name": "x",
        "pile_bonuses": {},
    }


@pytest.mark.parametrize("name", list(PRESETS))
def test_r13_presets_round_trip_through_a_plain_dict(name: str) -> None:
    ruleset = PRESETS[name]
    assert Ruleset.from_dict(ruleset.to_dict()) == ruleset


@pytest.mark.parametrize("name", list(PRESETS))
def test_r13_each_plain_dict_of_a_ruleset_is_the_callers_own(name: str) -> None:
    """Every deal records ``to_dict``, computed once per ruleset: what one caller changes in
    its dict (or in a dict or list inside it) is not in the next one's."""
    ruleset = PRESETS[name]
    first = ruleset.to_dict()
    expected = copy.deepcopy(first)
    for value in list(first.values()):
        if isinstance(value, dict):
            value["changed"] = 1
        elif isinstance(value, list):
            value.append("changed")
    first["name"] = "changed"
    assert ruleset.to_dict() == expected and ruleset.to_dict() is not ruleset.to_dict()


def test_r13_rulesets_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        # The assignment a frozen ruleset refuses, which mypy refuses too.
        STANDARD.scoop_multiplier = 3  # type: ignore[misc]


def test_r13_an_object_overrides_standard_parameter_by_parameter() -> None:
    ruleset = resolve({"wheel": "lowest", "pile_bonuses": {"back": {"flush": 2}}})
    assert ruleset.wheel == "lowest" and ruleset.pile_worth(2, Category.FLUSH) == 2
    assert ruleset.scoop_multiplier == 2 and ruleset.name == "custom"
    assert (
        resolve({"preset": "fujian", "scoop_multiplier": 3}).pile_worth(1, Category.FULL_HOUSE) == 2
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("vegas", "unknown ruleset 'vegas'"),
        ({"scoop": 2}, "unknown ruleset parameter 'scoop'"),
        ({"scoop_multiplier": 0}, "scoop_multiplier: expected an integer >= 1"),
        ({"scoop_multiplier": True}, "scoop_multiplier: expected an integer >= 1"),
        ({"wheel": "first"}, "wheel: expected one of second, lowest"),
        ({"foul_counts_for_home_run": "yes"}, "expected true or false"),
        ({"pile_bonuses": {"front": {"flush": 2}}}, "a front cannot be a flush"),
        ({"pile_bonuses": {"top": {}}}, "unknown pile 'top'"),
        ({"pile_bonuses": {"back": {"royal": 2}}}, "unknown category 'royal'"),
        ({"special_points": {"dragon": -1}}, "dragon: expected an integer >= 0"),
        ({"stake_policy": "random"}, "expected one of by_balance, fixed"),
        ({"preset": "vegas"}, "unknown ruleset 'vegas'"),
        (["standard"], "preset name or an object"),
    ],
)
# spec is JSON as a client may send it: a list is refused too.
def test_r13_unknown_or_invalid_parameters_are_refused(spec: Any, message: str) -> None:
    with pytest.raises(RulesetError, match=message):
        resolve(spec)


def test_r13_from_dict_requires_every_parameter() -> None:
    data = STANDARD.to_dict()
    del data["wheel"]
    with pytest.raises(RulesetError, match="missing parameters: wheel"):
        Ruleset.from_dict(data)
