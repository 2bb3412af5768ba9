"""R8 stakes and R11 escape penalties."""

import pytest

from domain.errors import StakeError
from domain.rules.escape import escape_penalty, escape_transfers
from domain.rules.ruleset import STANDARD
from domain.rules.stakes import check_can_sit, round_base, stake_bracket


def test_r8_1_sitting_down_needs_the_seat_minimum() -> None:
    check_can_sit("A", 48, STANDARD)
    with pytest.raises(StakeError, match="player A has 47 coins; this table needs at least 48"):
        check_can_sit("A", 47, STANDARD)


@pytest.mark.parametrize(
    ("balance", "base"),
    [
        (48, 1),
        (479, 1),
        (480, 10),
        (4_799, 10),
        (4_800, 100),
        (47_999, 100),
        (48_000, 1_000),
        (479_999, 1_000),
        (480_000, 10_000),
    ],
)
def test_r8_2_stake_brackets(balance: int, base: int) -> None:
    assert stake_bracket(balance, 48) == base


def test_r8_3_by_balance_base_is_the_bracket_of_the_lowest_balance() -> None:
    assert round_base({"A": 5_000, "B": 600, "C": 100_000}, STANDARD) == 10


def test_r8_3_fixed_policy_has_one_base_and_scaled_seat_minimum() -> None:
    fixed = STANDARD.with_overrides({"stake_policy": "fixed", "base_stake": 10})
    assert round_base({"A": 480, "B": 100_000}, fixed) == 10
    with pytest.raises(StakeError, match="needs at least 480"):
        check_can_sit("A", 479, fixed)


def test_r8_4_deal_is_refused_naming_who_is_short() -> None:
    with pytest.raises(StakeError, match=r"B \(47\), C \(0\)"):
        round_base({"A": 500, "B": 47, "C": 0}, STANDARD)


def test_r11_1_penalty_is_25_times_base_capped_by_balance() -> None:
    assert escape_penalty(10, 10_000, 25) == 250
    assert escape_penalty(10, 100, 25) == 100


def test_r11_2_worked_example_8_shared_from_the_seat_after_the_escapee() -> None:
    moves = escape_transfers("B", ["A", "B", "C", "D"], base=1, balance_at_deal=1000, multiple=25)
    assert moves == {"B": -25, "C": 9, "D": 8, "A": 8}
    assert sum(moves.values()) == 0


def test_r11_2_leftover_wraps_around_the_table() -> None:
    moves = escape_transfers("C", ["A", "B", "C", "D"], base=1, balance_at_deal=1000, multiple=26)
    assert moves == {"C": -26, "D": 9, "A": 9, "B": 8}


def test_r11_3_two_player_escape_pays_the_other_player_everything() -> None:
    moves = escape_transfers("A", ["A", "B"], base=10, balance_at_deal=1000, multiple=25)
    assert moves == {"A": -250, "B": 250}
