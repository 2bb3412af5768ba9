"""R7 and R9: coins, caps and largest-remainder rounding."""

from domain.rules.settlement import gross, settle


def test_r7_1_gross_is_points_times_base() -> None:
    assert gross([12, -6, -6], 10) == [120, -60, -60]


def test_r9_1_worked_example_6_losers_pay_at_most_their_balance() -> None:
    assert settle(gross([12, -6, -6], 10), [500, 30, 100]) == [90, -30, -60]


def test_r9_2_worked_example_7_scaled_with_largest_remainder() -> None:
    assert settle(gross([5, 4, -9], 10), [1000, 1000, 50]) == [28, 22, -50]


def test_r9_2_remainder_ties_go_to_the_earlier_seat() -> None:
    # Owed 20 (10 + 10), paid 5: shares 2.5 each → 2 + 2, one coin left, remainders tie.
    assert settle([10, 10, -20], [100, 100, 5]) == [3, 2, -5]
    assert settle([-20, 10, 10], [5, 100, 100]) == [-5, 3, 2]


def test_r9_1_uncapped_settlement_is_the_gross_result() -> None:
    assert settle([30, -10, -20], [0, 10, 20]) == [30, -10, -20]


def test_r9_1_a_winner_is_not_capped_by_their_own_balance() -> None:
    assert settle([40, -40], [0, 1000]) == [40, -40]


def test_r7_2_and_r9_zero_everywhere_settles_to_zero() -> None:
    assert settle([0, 0, 0], [0, 0, 0]) == [0, 0, 0]
    assert settle([10, -10], [5, 0]) == [0, 0]


def test_r9_3_settlement_is_a_pure_function_of_its_inputs() -> None:
    args = ([13, 7, -11, -9], [50, 60, 70, 5])
    assert settle(*args) == settle(*args)
    assert sum(settle(*args)) == 0
