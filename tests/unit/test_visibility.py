"""``domain.visibility``: who sees which hands and submissions of a round, before and after
it is over (R5.6, R10.4, R12.1, R12.6)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from domain.dealing import deal_record
from domain.round import Round
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.visibility import (
    DEALER,
    OBSERVER,
    is_public,
    sees_submission,
    shows_qualifying,
    viewpoint,
    visible_hands,
)

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEED = bytes(range(32))


def dealt() -> Round:
    round_ = Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances=dict.fromkeys("ABC", 1000),
            server_seed=SEED,
            client_seed="c",
            ruleset=STANDARD,
            at=T0,
        )
    )
    best = suggest(round_.hand("A"), STANDARD).arrangement
    round_.arrange("A", list(best.front), list(best.middle), list(best.back), T0)
    return round_


def revealed() -> Round:
    round_ = dealt()
    round_.reveal(SEED, T0.replace(minute=5))  # past the deadline: B and C are foul
    return round_


def abandoned() -> Round:
    round_ = dealt()
    round_.escape("B", T0)
    round_.escape("C", T0)
    round_.abandon(SEED, T0)
    return round_


@pytest.mark.parametrize(
    ("viewer", "hands"),
    [("A", ["A"]), ("B", ["B"]), (OBSERVER, []), ("somebody else", []), (DEALER, ["A", "B", "C"])],
)
def test_r12_1_before_the_end_a_player_sees_only_their_own_hand(
    viewer: str, hands: list[str]
) -> None:
    assert visible_hands(dealt(), viewer) == hands


@pytest.mark.parametrize("ended", [revealed, abandoned], ids=["revealed", "abandoned"])
@pytest.mark.parametrize("viewer", ["A", "B", OBSERVER, "somebody else", DEALER])
def test_r10_4_r12_6_once_the_round_is_over_everyone_sees_everything(
    ended: Callable[[], Round], viewer: str
) -> None:
    round_ = ended()
    assert is_public(round_)
    assert visible_hands(round_, viewer) == ["A", "B", "C"]
    assert all(sees_submission(round_, viewer, p) for p in "ABC")
    assert viewpoint(round_, viewer or OBSERVER) == OBSERVER


def test_r12_1_before_the_end_only_the_player_and_the_dealer_see_a_submission() -> None:
    round_ = dealt()
    assert not is_public(round_)
    assert sees_submission(round_, "A", "A") and sees_submission(round_, DEALER, "A")
    assert not sees_submission(round_, "B", "A") and not sees_submission(round_, OBSERVER, "A")


def test_r5_6_only_the_player_deciding_is_told_which_specials_their_hand_qualifies_for() -> None:
    round_ = dealt()
    assert shows_qualifying(round_, "A", "A")
    assert not shows_qualifying(round_, "B", "A")
    assert not shows_qualifying(round_, OBSERVER, "A")
    assert not shows_qualifying(round_, DEALER, "A")
    assert not shows_qualifying(revealed(), "A", "A")


def test_a_viewer_who_is_no_player_shares_the_observers_view() -> None:
    round_ = dealt()
    assert [viewpoint(round_, v) for v in ["A", "C", OBSERVER, "made-up"]] == [
        "A",
        "C",
        OBSERVER,
        OBSERVER,
    ]
