"""R5.4's ``any`` under R14.5.3's ``special_order = points``, through the real ``thirteen score``
(issue 25 attack): the strongest special a hand qualifies for is the one worth the most points,
as it is between two players' specials."""

from __future__ import annotations

from tests.cli.conftest import jsonl, run

# 2 3 4 5 three times each and a 6: all_small (R5.1, 6 points under puxian, R14.6) and four_trips
# (52 under puxian); the table's order (R5.2) puts all_small first.
SMALL_TRIPS = "2c 2d 2h 3c 3d 3h 4c 4d 4h 5c 5d 5h 6c".split()
NORMAL = {
    "front": ["Kh", "7s", "9c"],
    "middle": ["Td", "Tc", "6h", "6d", "2s"],
    "back": ["3s", "4s", "5s", "6s", "7h"],
}


def _scored(special: str, ruleset: str = "puxian") -> list[dict[str, object]]:
    """The players as ``thirteen score`` scores A declaring ``special`` with SMALL_TRIPS
    against B's NORMAL arrangement under ``ruleset``."""
    done = run(
        ["score"],
        jsonl(
            {
                "ruleset": ruleset,
                "players": [
                    {"id": "A", "special": special, "cards": SMALL_TRIPS},
                    {"id": "B", **NORMAL},
                ],
            }
        ),
    )
    assert done.status == 0, done.stdout + done.stderr
    players: list[dict[str, object]] = done.lines[0]["players"]
    return players


def _score(special: str) -> list[object]:
    players = _scored(special)
    assert "special" in players[0], players
    return [p["points"] for p in players]


def test_r5_4_any_under_special_order_points_plays_the_special_worth_most() -> None:
    """R5.4, R14.5.3: under puxian (special_order points) the hand qualifies for all_small (6)
    and four_trips (52); ``any`` took all_small, the table's first, scoring A +6 where naming
    four_trips scores +52 (neither player holds the horse 8h). ``any`` plays four_trips."""
    assert _score("four_trips") == [52, -52]
    assert _score("all_small") == [6, -6]
    a, b = _scored("any")
    assert (a["special"], a["points"], b["points"]) == ("four_trips", 52, -52)


def test_r5_4_any_under_the_tables_order_still_plays_the_first_in_r5_2() -> None:
    """R5.2, R5.4: under ``special_order = table`` (standard) the same hand's ``any`` plays
    all_small, first in the table's order (10 points there), as it always did."""
    assert _scored("any", "standard")[0]["special"] == "all_small"


def test_r5_6_suggest_lists_the_specials_strongest_first_under_points_order() -> None:
    """R5.6, R14.5.3: ``thirteen suggest`` lists the specials strongest first, which under
    puxian's points order puts four_trips (52) before all_small (6); under standard's table
    order all_small stays first."""
    done = run(["suggest"], jsonl({"cards": SMALL_TRIPS, "ruleset": "puxian"}))
    assert done.status == 0, done.stdout + done.stderr
    assert done.lines[0]["specials"][:2] == ["four_trips", "all_small"]
    done = run(["suggest"], jsonl({"cards": SMALL_TRIPS, "ruleset": "standard"}))
    assert done.lines[0]["specials"][:2] == ["all_small", "four_trips"]
