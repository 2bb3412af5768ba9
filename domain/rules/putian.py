"""R14.6: the parameters of the Putian (莆仙) tables, as data: ``puxian`` plays them with four
players; ``puxian5`` and ``puxian6`` add the seats and the extra suits (``domain.rules.ruleset``
holds the presets)."""

from __future__ import annotations

from typing import Any

SPECIAL_POINTS: dict[str, int | None] = {
    "supreme_dragon": 104,
    **dict.fromkeys(("dragon", "three_quads", "four_trips"), 52),
    **dict.fromkeys(("twelve_royals", "three_straight_flushes", "two_fives_one_trips"), 26),
    "six_of_a_kind": 20,
    **dict.fromkeys(
        (
            "all_big",
            "all_small",
            "one_color",
            "five_pairs_trips",
            "six_pairs",
            "three_straights",
            "three_flushes",
        ),
        6,
    ),
    "two_monsters_front_trips": None,  # absent: cannot be declared (R14.5.4)
}
"""R14.6 special points; two_monsters_front_trips is left out (``None``), so it cannot be declared
(R14.5.4)."""

PUXIAN: dict[str, Any] = {
    "name": "puxian",
    "horse_card": "8h",
    "horse_multiplier": 2,
    "horse_both_holders": "cancel",
    "roll_over_counts_as_scoop": False,
    "scoop_multiplier": 2,
    "scoop_bonus": 0,
    "home_run_multiplier": 2,
    "home_run_min_players": 3,
    "pile_bonuses": {
        "front": {"three_of_a_kind": 3},
        "middle": {
            "full_house": 2,
            "four_of_a_kind": 8,
            "straight_flush": 10,
            "five_of_a_kind": 20,
        },
        "back": {"four_of_a_kind": 4, "straight_flush": 5, "five_of_a_kind": 10},
    },
    "special_points": SPECIAL_POINTS,
    "special_order": "points",
    "special_counting": "partition",
    "quad_counts_as_two_pairs": True,
    "group_kickers": False,
    "flush_pairs_first": True,
    "extra_specials": ["two_fives_one_trips", "six_of_a_kind"],
    "wheel": "second",
}

FIVE_SEATS: dict[str, Any] = {"name": "puxian5", "max_players": 5, "extra_suits": ["d"]}
SIX_SEATS: dict[str, Any] = {"name": "puxian6", "max_players": 6, "extra_suits": ["d", "c"]}
