"""R6: the showdown, with every worked example of RULES.md that involves points."""

import pytest

from domain.rules.cards import DECK
from domain.rules.play import NO_ARRANGEMENT, Play, declare
from domain.rules.ruleset import FUJIAN, STANDARD, Ruleset
from domain.rules.scoring import Seat, score_round
from domain.rules.specials import Special
from domain.rules.suggest import suggest

from .helpers import cards, seat

A1 = "Qh Qd 3c | 9s 9c 5d 5h Kc | 2s 6s 8s Js As"
B1 = "Kh 7d 4c | Td Tc 6h 6c 2h | 3d 4d 5c 6d 7h"
D2 = "Kh 7d 4c | Td 9d 6d 6c 2d | 2h 6h 8h Jh Ah"
A3 = "Ks Kh 2c | 9s 9c 9d 5h 5d | 4c 5c 6c 7c 8c"
B3 = "2d 3h 4h | 5s 6d 6h 7h 8s | Tc Js Qd Kd As"
C3 = "4d 6s 7d | 8d 8h Td Ts Jd | Jh Qh Qs Ad Ah"
D3 = "2h 2s 3c | 3d 3s 4s 7s 9h | Th Jc Qc Kc Ac"
D4 = "3d 3s 3c | 2h 2s 4s 7s 9h | Th Jc Qc Kc Ac"


def special(player_id: str, special_id: str, text: str, ruleset: Ruleset = STANDARD) -> Seat:
    return Seat(player_id, declare(cards(text), special_id, ruleset))


def test_r6_1_worked_example_1_piles_won_and_lost() -> None:
    score = score_round([seat("A", A1), seat("B", B1)], STANDARD)
    assert score.points == [1, -1]
    pair = score.pairs[0]
    assert (pair.piles, pair.scoop, pair.home_run) == ((1, -1, 1), False, False)
    assert "A's back (flush, A-high) beats B's back (straight, 7-high)" in pair.explanation


def test_r6_2_worked_example_2_roll_over_counts_as_scoop() -> None:
    score = score_round([seat("A", A1), seat("D", D2)], STANDARD)
    assert score.points == [4, -4]
    assert score.pairs[0].piles == (1, 1, 0)
    assert score.pairs[0].scoop


def test_r6_2_scoop_multiplier_is_a_ruleset_parameter() -> None:
    ruleset = STANDARD.with_overrides({"scoop_multiplier": 3})
    assert score_round([seat("A", A1), seat("D", D2)], ruleset).points == [6, -6]


def test_r6_7_worked_example_3_home_run() -> None:
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D3)], STANDARD)
    assert score.points == [36, -13, -12, -11]
    assert [p.points for p in score.pairs] == [12, 12, 12, -1, 0, -1]
    assert [p.home_run for p in score.pairs] == [True, True, True, False, False, False]


def test_r6_7_no_home_run_below_the_minimum_player_count() -> None:
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3)], STANDARD)
    assert score.points == [12, -7, -5]
    three = STANDARD.with_overrides({"home_run_min_players": 3})
    assert score_round([seat("A", A3), seat("B", B3), seat("C", C3)], three).points == [
        24,
        -13,
        -11,
    ]


def test_r6_3_and_r6_7_worked_example_4_foul() -> None:
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)], STANDARD)
    assert score.points == [36, -7, -5, -24]
    assert [p.foul for p in score.players] == [False, False, False, True]
    assert score.pairs[2].piles == (1, 1, 1) and score.pairs[2].scoop


def test_r6_1_and_r6_3_worked_example_4_under_fujian_pile_bonuses() -> None:
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)], FUJIAN)
    assert score.points == [96, -27, -25, -44]


def test_r6_7_foul_does_not_count_for_home_run_when_the_ruleset_says_so() -> None:
    ruleset = STANDARD.with_overrides({"foul_counts_for_home_run": False})
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)], ruleset)
    assert not any(p.home_run for p in score.pairs)
    assert score.points == [18, -1, 1, -18]


def test_r6_4_foul_against_foul_is_zero() -> None:
    score = score_round([seat("D", D4), Seat("E", NO_ARRANGEMENT)], STANDARD)
    assert score.points == [0, 0]
    assert score.pairs[0].piles == (0, 0, 0) and not score.pairs[0].scoop


def test_r4_3_a_player_with_no_arrangement_is_foul() -> None:
    score = score_round([seat("A", A1), Seat("E", NO_ARRANGEMENT)], STANDARD)
    assert score.points == [6, -6]
    assert score.players[1].foul and score.players[1].foul_reason == "no arrangement"


def test_r6_5_and_r6_6_worked_example_5_special_hands() -> None:
    score = score_round(
        [
            seat("A", A3),
            special("B", "six_pairs", "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As"),
            special("C", "three_flushes", "Js Qs 5s 2s 3s 4s 6s 7s Jh Qh Ah 7h Th"),
        ],
        STANDARD,
    )
    assert score.points == [-7, 8, -1]
    assert [p.special for p in score.players] == [None, Special.SIX_PAIRS, Special.THREE_FLUSHES]
    assert all(p.piles == () and not p.scoop for p in score.pairs)


def test_r6_5_special_against_foul_gets_its_points_without_multiplier() -> None:
    score = score_round(
        [
            special("B", "six_pairs", "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As"),
            Seat("E", NO_ARRANGEMENT),
        ],
        STANDARD,
    )
    assert score.points == [4, -4]


def test_r6_6_the_same_special_on_both_sides_ties() -> None:
    score = score_round(
        [
            special("B", "six_pairs", "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As"),
            special("C", "six_pairs", "2c 2s 3c 3s 4c 4s 6c 6s 9s 9h Tc Th Ah"),
        ],
        STANDARD,
    )
    assert score.points == [0, 0]


def test_r6_5_special_points_follow_the_ruleset() -> None:
    ruleset = STANDARD.with_overrides({"special_points": {"six_pairs": 7}})
    score = score_round(
        [seat("A", A1), special("B", "six_pairs", "2d 2h 3h 3c 4h 4d 6d 6h 8c 8h Td Ts Ad")],
        ruleset,
    )
    assert score.points == [-7, 7]


def test_r6_6_stronger_special_takes_its_own_points_even_if_fewer() -> None:
    ruleset = STANDARD.with_overrides({"special_points": {"all_big": 3, "six_pairs": 9}})
    score = score_round(
        [
            special("B", "all_big", "8c 8d 9h Ts Jc Qd Kh Ac Ad 9c Tc Jd Qs", ruleset),
            special("C", "six_pairs", "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Th As", ruleset),
        ],
        ruleset,
    )
    assert score.points == [3, -3]


def test_r6_9_three_specials_and_one_normal_player_loses_to_each() -> None:
    b = special("B", "six_pairs", "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As")
    c = special("C", "one_color", "2c 3c 4c 5c 6c 7c 8c 9c Tc Jc 2s 3s 4s")
    d = special("D", "all_big", "9d 9h Jd Jh Js Qd Qh Qs Kd Kh Ks Ad Ah")
    used = set(
        cards(
            "2d 2h 3h 3d 4h 4d 6d 6h 8s 8h Td Ts As 2c 3c 4c 5c 6c 7c 8c 9c Tc Jc 2s 3s 4s "
            "9d 9h Jd Jh Js Qd Qh Qs Kd Kh Ks Ad Ah"
        )
    )
    rest = [card for card in DECK if card not in used]
    a = Seat("A", Play(suggest(rest, STANDARD).arrangement))
    score = score_round([a, b, c, d], STANDARD)
    # B-C: one_color outranks six_pairs; D's all_big outranks both; A loses to each.
    assert score.points == [-24, -16, 10, 30]


@pytest.mark.parametrize("ruleset", [STANDARD, FUJIAN], ids=["standard", "fujian"])
def test_r6_8_totals_sum_to_zero(ruleset: Ruleset) -> None:
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)], ruleset)
    assert sum(score.points) == 0


def test_r6_explanations_name_piles_scoops_and_home_runs() -> None:
    score = score_round([seat("A", A3), seat("B", B3), seat("C", C3), seat("D", D4)], STANDARD)
    text = score.pairs[2].explanation
    assert "D is foul (front (three of a kind, 3s) beats middle (pair, 2s))" in text
    assert "A's home run ×2" in text and text.endswith("A +12.")
