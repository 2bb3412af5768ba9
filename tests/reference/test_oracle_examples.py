"""The oracle itself is checked: it must reproduce every worked example of RULES.md and R12.7."""

from __future__ import annotations

import json
from typing import Any

import pytest

from . import oracle

A = "Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As"
B = "Kh 7d 4c | Td Tc 6h 6c 2h | 3d 4d 5c 6d 7h"
HOME_RUN_TABLE = {
    "A": "Ks Kh 2c | 9s 9c 9d 5h 5d | 4c 5c 6c 7c 8c",
    "B": "2d 3h 4h | 5s 6d 6h 7h 8s | Tc Js Qd Kd As",
    "C": "4d 6s 7d | 8d 8h Td Ts Jd | Jh Qh Qs Ad Ah",
    "D": "2h 2s 3c | 3d 3s 4s 7s 9h | Th Jc Qc Kc Ac",
}


def arranged(player_id: str, text: str, **extra: Any) -> dict[str, Any]:
    front, middle, back = (pile.split() for pile in text.split("|"))
    return {"id": player_id, "front": front, "middle": middle, "back": back, **extra}


def declared(player_id: str, special: str, cards: str) -> dict[str, Any]:
    return {"id": player_id, "special": special, "cards": cards.split()}


def score(players: list[dict[str, Any]], **round_: Any) -> dict[str, Any]:
    result = oracle.score_line(json.dumps({"players": players, **round_}))
    assert "error" not in result, result
    return result


def points(result: dict[str, Any]) -> dict[str, int]:
    return {player["id"]: player["points"] for player in result["players"]}


def pair(result: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    return next(p for p in result["pairs"] if (p["a"], p["b"]) == (a, b))


def test_example_1_two_players_pile_by_pile() -> None:
    result = score([arranged("A", A), arranged("B", B)])
    assert points(result) == {"A": 1, "B": -1}
    assert pair(result, "A", "B")["piles"] == [1, -1, 1]
    assert pair(result, "A", "B")["scoop"] is False


def test_example_2_r6_2_roll_over_counts_as_scoop() -> None:
    result = score([arranged("A", A), arranged("D", "Kh 7d 4c | Td 9d 6d 6c 2d | 2h 6h 8h Jh Ah")])
    assert points(result) == {"A": 4, "D": -4}
    assert pair(result, "A", "D") | {"explanation": ""} == {
        "a": "A",
        "b": "D",
        "points": 4,
        "piles": [1, 1, 0],
        "scoop": True,
        "home_run": False,
        "explanation": "",
    }


def test_example_3_r6_7_home_run() -> None:
    result = score([arranged(pid, text) for pid, text in HOME_RUN_TABLE.items()])
    assert points(result) == {"A": 36, "B": -13, "C": -12, "D": -11}
    for other in "BCD":
        assert pair(result, "A", other)["points"] == 12
        assert pair(result, "A", other)["home_run"] is True
    assert pair(result, "B", "C")["points"] == -1
    assert pair(result, "B", "D")["points"] == 0
    assert pair(result, "B", "D")["piles"] == [-1, 1, 0]


def test_example_3_no_home_run_below_home_run_min_players() -> None:
    players = [arranged(pid, text) for pid, text in HOME_RUN_TABLE.items() if pid != "D"]
    assert points(score(players))["A"] == 12
    assert points(score(players, ruleset={"home_run_min_players": 3}))["A"] == 24


def test_example_4_r6_3_foul_against_normal() -> None:
    table = dict(HOME_RUN_TABLE, D="3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac")
    players = [arranged(pid, text) for pid, text in table.items()]
    result = score(players)
    assert [p["foul"] for p in result["players"]] == [False, False, False, True]
    assert points(result) == {"A": 36, "B": -7, "C": -5, "D": -24}
    assert pair(result, "A", "D")["points"] == 12
    assert pair(result, "B", "D")["piles"] == [1, 1, 1]
    assert points(score(players, ruleset="fujian")) == {"A": 96, "B": -27, "C": -25, "D": -44}


def test_example_4_foul_counts_for_home_run_false_removes_the_home_run() -> None:
    table = dict(HOME_RUN_TABLE, D="3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac")
    players = [arranged(pid, text) for pid, text in table.items()]
    result = score(players, ruleset={"foul_counts_for_home_run": False})
    assert points(result)["A"] == 6 * 3
    assert not any(p["home_run"] for p in result["pairs"])


def test_example_5_r6_5_r6_6_special_hands() -> None:
    result = score(
        [
            arranged("A", HOME_RUN_TABLE["A"]),
            declared("B", "six_pairs", "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As"),
            declared("C", "three_flushes", "Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Th"),
        ]
    )
    assert points(result) == {"A": -7, "B": 8, "C": -1}
    assert [p["special"] for p in result["players"]] == [None, "six_pairs", "three_flushes"]
    assert all(p["piles"] == [] and not p["scoop"] for p in result["pairs"])


def test_example_6_r9_1_capped_settlement() -> None:
    assert oracle.settle([120, -60, -60], [500, 30, 100]) == [90, -30, -60]


def test_example_7_r9_2_scaled_settlement() -> None:
    assert oracle.settle([50, 40, -90], [1000, 1000, 50]) == [28, 22, -50]


def test_r9_settlement_through_score_coins() -> None:
    # A scoops B and C (3 x 2 = 6 each), C beats B by one: totals A +12, B -7, C -5.
    # Base 10: B pays its 30 (capped), C pays 50; A is owed 120 and gets 120 x 80 / 120 = 80.
    result = score(
        [
            arranged("A", "Ks Kh 2c | 9s 9c 9d 5h 5d | 4c 5c 6c 7c 8c", balance=500),
            arranged("B", "2d 3h 4h | 5s 6d 6h 7h 8s | Tc Js Qd Kd As", balance=30),
            arranged("C", "4d 6s 7d | 8d 8h Td Ts Jd | Jh Qh Qs Ad Ah", balance=100),
        ],
        base=10,
    )
    assert points(result) == {"A": 12, "B": -7, "C": -5}
    assert [p["coins"] for p in result["players"]] == [80, -30, -50]


def test_r7_1_coins_are_gross_without_every_balance() -> None:
    result = score([arranged("A", A, balance=1), arranged("B", B)], base=10)
    assert [p["coins"] for p in result["players"]] == [10, -10]
    assert "coins" not in score([arranged("A", A), arranged("B", B)])["players"][0]


def test_example_8_r11_escape_penalty_shared_from_the_next_seat() -> None:
    penalty = oracle.escape_penalty(base=1, balance=1000)
    assert penalty == 25
    shares = oracle.share_escape_penalty(penalty, escapee=1, remaining=[0, 2, 3], seat_count=4)
    assert shares == {2: 9, 3: 8, 0: 8}


def test_r12_7_test_vector() -> None:
    hands = oracle.deal(bytes(32), "client", "r1", 4)
    assert [" ".join(hand) for hand in hands] == [
        "Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd",
        "8d Ac 2d 5c Jc 7s As 6h 5s 7c Jh 4s 9c",
        "6d Js Ah Tc Qs Kh 3h Qc Ad Kc Th 3s 8h",
        "6c 9h 7d 9d Ts 5h 9s Qh 7h Ks 2c 8c 4h",
    ]


# A few rule details beyond the examples, so the oracle's corners are pinned too.


def cards(text: str) -> list[oracle.Card]:
    return [oracle.parse_card(card) for card in text.split()]


@pytest.mark.parametrize(
    ("front", "middle", "expected"),
    [
        ("Ks Kh Ac", "Kc Kd Ad 7s 3s", 0),  # R3: (pair, K, A) equals (pair, K, A, 7, 3)
        ("As Kh 2c", "Ac Kd 3d 7s 4s", -1),  # R3: (high, A, K, 2) is below (high, A, K, 3, …)
        ("As Kh 5c", "Ac Kd 4d 3s 2s", 1),
        ("3s 3h 3c", "2c 2d 4d 4s 9s", 1),  # trips beat two pair
    ],
)
def test_r3_front_with_middle(front: str, middle: str, expected: int) -> None:
    assert oracle.compare_front_with_middle(cards(front), cards(middle), "second") == expected


def test_r2_3_wheel_second_and_lowest() -> None:
    wheel, king_high = cards("As 2d 3h 4c 5s"), cards("9s Td Jh Qc Ks")
    assert oracle.compare_piles(wheel, king_high, "second") == 1
    assert oracle.compare_piles(wheel, king_high, "lowest") == -1
    assert oracle.compare_piles(wheel, cards("Ts Jd Qh Kc As"), "second") == -1


def test_r5_specials_partition_semantics() -> None:
    quad_six_pairs = cards("2c 2d 2h 2s 3c 3d 4c 4d 5c 5d 6c 6d 7c")
    assert "six_pairs" not in oracle.qualifying_specials(quad_six_pairs)
    assert "six_pairs" in oracle.qualifying_specials(quad_six_pairs, quad_counts_as_two_pairs=True)
    trips_six_pairs = cards("2c 2d 2h 3s 3c 4d 4c 5d 5c 6d 6c 7d 7c")
    assert "six_pairs" in oracle.qualifying_specials(trips_six_pairs)
    assert "five_pairs_trips" in oracle.qualifying_specials(trips_six_pairs)
    quad_four_trips = cards("2c 2d 2h 2s 3c 3d 3h 4c 4d 4h 5c 5d 5h")
    assert "four_trips" in oracle.qualifying_specials(quad_four_trips)


def test_r5_1_supreme_dragon_holds_every_weaker_pattern_it_shows() -> None:
    assert oracle.qualifying_specials(cards("2s 3s 4s 5s 6s 7s 8s 9s Ts Js Qs Ks As")) == [
        "supreme_dragon",
        "dragon",
        "three_straight_flushes",
        "one_color",
        "three_straights",
        "three_flushes",
    ]


def test_r5_3_front_a_2_3_and_q_k_a_count_as_straights() -> None:
    hand = cards("As 2d 3h 4c 5d 6h 7c 8s 9d Th Jc Qs Kd")
    assert oracle.find_split("three_straights", frozenset(hand)) is not None
    assert oracle.split_qualifies(
        "three_straights", cards("Qs Kd As"), cards("2d 3h 4c 5d 6h"), cards("7c 8s 9d Th Jc")
    )


def test_r5_5_given_piles_must_show_a_split_pattern_even_for_any() -> None:
    # These cards hold three_flushes (2s 5s 9s | 3h 6h 8h Jh Kh | 4d 7d Td Qd 2d) and nothing
    # else; piles that do not show it cannot be declared as it, by name or as `any`.
    piles = [pile.split() for pile in "2s 5s 3h | 9s 6h 8h Jh Kh | 4d 7d Td Qd 2d".split("|")]
    opponent = arranged("B", "2c 3c 4c | 5c 6c 7c 8c 9c | Tc Jc Qc Kc Ac")
    for declared_as in ("three_flushes", "any"):
        player = {
            "id": "A",
            "special": declared_as,
            "front": piles[0],
            "middle": piles[1],
            "back": piles[2],
        }
        assert "error" in oracle.score_line(json.dumps({"players": [player, opponent]}))
    cards = " ".join(card for pile in piles for card in pile)
    result = score([declared("A", "any", cards), opponent])
    assert result["players"][0]["special"] == "three_flushes"
