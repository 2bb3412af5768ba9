"""``thirteen score`` through the real console script: formats and every bad input."""

from typing import Any

import pytest

from .conftest import jsonl, run


def normal(player_id: str, text: str, **extra: object) -> dict[str, object]:
    front, middle, back = (p.split() for p in text.split("|"))
    return {"id": player_id, "front": front, "middle": middle, "back": back, **extra}


A1 = normal("A", "Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As")
B1 = normal("B", "Kh 7d 4c | Td Tc 6h 6c 2h | 3d 4d 5c 6d 7h")
EX3 = [
    normal("A", "Ks Kh 2c | 9s 9c 9d 5h 5d | 4c 5c 6c 7c 8c"),
    normal("B", "2d 3h 4h | 5s 6d 6h 7h 8s | Tc Js Qd Kd As"),
    normal("C", "4d 6s 7d | 8d 8h Td Ts Jd | Jh Qh Qs Ad Ah"),
    normal("D", "2h 2s 3c | 3d 3s 4s 7s 9h | Th Jc Qc Kc Ac"),
]
EX4 = [*EX3[:3], normal("D", "3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac")]
SIX_PAIRS = {
    "id": "B",
    "special": "six_pairs",
    "cards": "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As".split(),
}
THREE_FLUSHES = {
    "id": "C",
    "special": "three_flushes",
    "cards": "Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Th".split(),
}


def points(line: dict[str, Any]) -> list[int]:
    return [p["points"] for p in line["players"]]


def test_score_output_shape_for_a_two_player_round() -> None:
    out = run(
        ["score"], jsonl({"base": 10, "players": [A1 | {"balance": 500}, B1 | {"balance": 30}]})
    )
    assert out.status == 0, out.stderr
    (line,) = out.lines
    assert line["players"] == [
        {"id": "A", "points": 1, "coins": 10, "foul": False, "special": None},
        {"id": "B", "points": -1, "coins": -10, "foul": False, "special": None},
    ]
    (pair,) = line["pairs"]
    assert {k: pair[k] for k in ("a", "b", "points", "piles", "scoop", "home_run")} == {
        "a": "A",
        "b": "B",
        "points": 1,
        "piles": [1, -1, 1],
        "scoop": False,
        "home_run": False,
    }
    assert "A's back (flush, A-high) beats B's back (straight, 7-high)" in pair["explanation"]


def test_score_worked_examples_3_4_5_and_fujian_in_one_stream() -> None:
    out = run(
        ["score"],
        jsonl(
            {"players": EX3},
            {"players": EX4},
            {"ruleset": "fujian", "players": EX4},
            {"players": [EX3[0], SIX_PAIRS, THREE_FLUSHES]},
        ),
    )
    assert out.status == 0, out.stderr
    assert [points(line) for line in out.lines] == [
        [36, -13, -12, -11],
        [36, -7, -5, -24],
        [96, -27, -25, -44],
        [-7, 8, -1],
    ]
    assert [p["special"] for p in out.lines[3]["players"]] == [None, "six_pairs", "three_flushes"]
    assert [p["foul"] for p in out.lines[1]["players"]] == [False, False, False, True]


def test_score_coins_are_gross_without_balances_and_settled_with_them() -> None:
    players = [EX3[0], EX3[1], EX3[2]]
    gross = run(["score"], jsonl({"base": 10, "players": players})).lines[0]
    assert [p["coins"] for p in gross["players"]] == [120, -70, -50]
    capped = [
        players[0] | {"balance": 500},
        players[1] | {"balance": 30},
        players[2] | {"balance": 100},
    ]
    settled = run(["score"], jsonl({"base": 10, "players": capped})).lines[0]
    assert [p["coins"] for p in settled["players"]] == [80, -30, -50]
    plain = run(["score"], jsonl({"players": players})).lines[0]
    assert all("coins" not in p for p in plain["players"])


def test_score_ruleset_object_overrides_standard() -> None:
    out = run(
        ["score"],
        jsonl(
            {
                "ruleset": {"scoop_multiplier": 3, "pile_bonuses": {"back": {"flush": 2}}},
                "players": [A1, normal("D", "Kh 7d 4c | Td 9d 6d 6c 2d | 2h 6h 8h Jh Ah")],
            }
        ),
    )
    assert points(out.lines[0]) == [6, -6]


def test_score_accepts_any_and_a_given_split() -> None:
    any_ = SIX_PAIRS | {"special": "any"}
    split = {
        "id": "C",
        "special": "three_flushes",
        "front": ["Js", "Qs", "5s"],
        "middle": "Jh Qh Ah 7h Th".split(),
        "back": "2s 3s 4s 6s 7s".split(),
    }
    out = run(["score"], jsonl({"players": [EX3[0], any_, split]}))
    assert out.status == 0, out.stderr
    assert [p["special"] for p in out.lines[0]["players"]] == [None, "six_pairs", "three_flushes"]


BAD = [
    ("{not json", "malformed JSON"),
    ("[1, 2]", "a round must be a JSON object"),
    ({"players": [A1]}, "needs 2 to 4 players, got 1"),
    (
        {
            "players": [
                A1,
                B1,
                EX3[2],
                EX3[3],
                normal("E", "2c 3c 4c | 5c 6c 7c 8c 9c | Tc Jc Qc Kc Ac"),
            ]
        },
        "needs 2 to 4 players, got 5",
    ),
    ({"players": [A1, B1 | {"id": "A"}]}, 'player id "A" appears twice'),
    ({"players": [A1 | {"front": ["Qh", "Qd", "Xx"]}, B1]}, "player A: unknown card 'Xx'"),
    (
        {"players": [A1 | {"front": ["Qh", "Qd", "Qh"]}, B1]},
        "player A: card Qh appears twice in their hand",
    ),
    (
        {"players": [A1, B1 | {"front": ["Qh", "7d", "4c"]}]},
        "player B: card Qh is also in player A's hand",
    ),
    ({"players": [A1 | {"front": ["Qh", "Qd"]}, B1]}, "player A: the front needs 3 cards, got 2"),
    (
        {"players": [A1, B1 | {"back": "3d 4d 5c 6d".split()}]},
        "player B: the back needs 5 cards, got 4",
    ),
    (
        {"players": [EX3[0], SIX_PAIRS | {"special": "seven_pairs"}]},
        "player B: unknown special 'seven_pairs'",
    ),
    (
        {"players": [EX3[0], SIX_PAIRS | {"special": "dragon"}]},
        "player B: the cards do not qualify for dragon",
    ),
    (
        {"players": [EX3[0], SIX_PAIRS | {"cards": SIX_PAIRS["cards"][:12]}]},
        "player B: a special hand needs 13 cards, got 12",
    ),
    ({"ruleset": "vegas", "players": [A1, B1]}, "unknown ruleset 'vegas'"),
    ({"ruleset": {"scoop": 2}, "players": [A1, B1]}, "unknown ruleset parameter 'scoop'"),
    ({"base": -1, "players": [A1, B1]}, "base must be a whole number >= 0, got -1"),
    ({"base": 1.5, "players": [A1, B1]}, "base must be a whole number >= 0, got 1.5"),
    ({"players": [A1 | {"balance": -5}, B1]}, "player A: balance must be a whole number >= 0"),
    ({"players": [A1, {"front": ["Kh"]}]}, "player 2: 'id' must be a non-empty string"),
    ({"players": [A1, B1 | {"colour": "red"}]}, "player B: unknown field 'colour'"),
    (
        {"players": [A1, {"id": "B", "cards": SIX_PAIRS["cards"]}]},
        "player B: 'cards' goes with a 'special'",
    ),
    ({"players": [A1, {"id": "B", "front": ["Kh", "7d", "4c"]}]}, "player B: missing middle"),
    ({"rules": "standard", "players": [A1, B1]}, "unknown field 'rules'"),
]


@pytest.mark.parametrize(("line", "message"), BAD, ids=[m for _, m in BAD])
def test_score_bad_input_is_answered_in_place_with_exit_status_2(
    line: str | dict[str, object], message: str
) -> None:
    out = run(["score"], jsonl({"players": [A1, B1]}, line, {"players": [A1, B1]}))
    assert out.status == 2
    assert len(out.lines) == 3
    assert points(out.lines[0]) == points(out.lines[2]) == [1, -1]
    assert set(out.lines[1]) == {"error"}
    assert message in out.lines[1]["error"]
    assert out.lines[1]["error"].startswith("line 2: ")
    assert message in out.stderr and "Traceback" not in out.stderr


def test_score_skips_blank_lines_and_accepts_empty_input() -> None:
    assert run(["score"], "\n\n").lines == []
    assert run(["score"], "").status == 0


@pytest.mark.parametrize("command", ["score", "suggest"])
def test_absurd_json_is_answered_on_its_line_not_with_a_traceback(command: str) -> None:
    """A line nested past the parser's limit, or with a number past Python's 4,300 digits, is
    malformed input: its own error line and exit status 2, and the next line still answered."""
    deep = "[" * 100_000 + "]" * 100_000
    long = '{"players": ' + "9" * 5_000 + "}"
    out = run([command], jsonl(deep, long))
    assert out.status == 2 and "Traceback" not in out.stderr
    assert [line["error"] for line in out.lines] == [
        "line 1: malformed JSON: nested too deeply",
        "line 2: malformed JSON: a number is too long",
    ]
