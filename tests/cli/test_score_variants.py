"""``thirteen score`` and ``suggest`` under R14's variants, through the real console script."""

from __future__ import annotations

from .conftest import jsonl, run
from .test_score import A1, B1, EX3, normal, points

EX5 = [
    normal("A", "Qc Qd Qh | 9s Ts Js Qs Ks | Ac Ad Ad Ah As"),
    normal("B", "4c 4d 4d | Kc Kd Kd Kh 4s | 8c 8d 8d 8h 8s"),
    normal("C", "3c 3d 3d | Jc Jd Jd Jh 3s | 7c 7d 7d 7h 7s"),
    normal("D", "2c 2d 2d | Tc Td Td Th 2h | 6c 6d 6d 6h 6s"),
    normal("E", "Qd 4h 3h | 9c 9d 9d 9h 2s | 5c 5d 5d 5h 5s"),
]
FIVES = [
    normal("A", "Kc Kh 2s | 4c 4d 4d 4h 4s | 6c 6d 6d 6h 6s"),
    normal("B", "Qc Qd 3s | 8h 9h Th Jh Qh | 9s Ts Js Qs Ks"),
]


def test_r14_the_worked_examples_score_through_the_cli() -> None:
    """R14 examples 1, 2, 4, 5 and 6 as ``thirteen score`` lines; one line per ruleset."""
    five_seats = {"max_players": 5, "extra_suits": ["d"]}
    out = run(
        ["score"],
        jsonl(
            {"ruleset": {"horse_card": "8s"}, "players": [A1, B1]},
            {"ruleset": {"horse_card": "Ah"}, "players": EX3},
            {"ruleset": {"preset": "puxian5", "horse_card": "none"}, "players": FIVES},
            {"ruleset": five_seats, "players": EX5},
            {"ruleset": {"roll_over_counts_as_scoop": False}, "players": [A1, EX_D]},
        ),
    )
    assert out.status == 0, out.stderr
    assert [points(line) for line in out.lines] == [
        [2, -2],
        [48, -14, -24, -10],
        [62, -62],
        [48, 6, -6, -18, -30],
        [2, -2],
    ]
    assert len(out.lines[3]["pairs"]) == 10  # R14.2.6


EX_D = normal("D", "Kh 7d 4c | Td 9d 6d 6c 2d | 2h 6h 8h Jh Ah")


def test_r14_2_3_copies_beyond_the_deck_and_seats_beyond_max_players_are_refused() -> None:
    """R14.2.1, R14.2.3: exit 2 naming the card or the count; the standard deck still refuses a
    second copy as before."""
    third = [FIVES[0], normal("B", "Qc Qd 3s | 8h 9h Th Jh Qh | 9s Ts Js Qs 4d")]
    out = run(
        ["score"],
        jsonl(
            {"ruleset": "puxian5", "players": third},
            {"ruleset": "puxian", "players": EX5},
            {"players": FIVES},
            {"ruleset": {"max_players": 5}, "players": EX5},
        ),
    )
    assert out.status == 2
    errors = [line["error"] for line in out.lines]
    assert "player B: card 4d is given 3 times; the deck holds 2 (R14.2.3)" in errors[0]
    assert "a round needs 2 to 4 players, got 5" in errors[1]
    assert "player A: card 4d appears twice in their hand" in errors[2]
    assert "ruleset max_players: 5 players need 65 cards and the deck has 52" in errors[3]


def test_r14_3_1_suggest_builds_five_of_a_kind_from_copies() -> None:
    """R14.3.1, R14.4.3, R5.6: under puxian6 the helper finds six_of_a_kind and arranges the
    copies without a foul."""
    hand = "4c 4c 4d 4d 4h 4s 9c 9d 9h Kc Kd Kh 2s".split()
    out = run(["suggest"], jsonl({"cards": hand, "ruleset": "puxian6"}, {"cards": hand}))
    assert out.status == 2  # the standard deck has one 4c
    ok, refused = out.lines
    # strongest first under puxian's points order (R14.5.3): four_trips (52) before it (20)
    assert ok["specials"][:2] == ["four_trips", "six_of_a_kind"]
    placed = [c for pile in ok["arrangement"].values() for c in pile]
    assert sorted(placed) == sorted(hand)
    assert "card 4c appears twice" in refused["error"]
