"""Invariants of the rules, checked as properties over random rounds (hypothesis)."""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st

from domain.errors import SpecialError
from domain.fairness.shuffle import deal
from domain.rules.arrangement import Arrangement
from domain.rules.cards import DECK, Card
from domain.rules.play import NO_ARRANGEMENT, Play, declare
from domain.rules.ruleset import FUJIAN, STANDARD, Ruleset
from domain.rules.scoring import Seat, score_round
from domain.rules.settlement import settle
from domain.rules.suggest import suggest

rulesets = st.builds(
    lambda base, scoop, home, min_players, foul_counts, wheel, quads: base.with_overrides(
        {
            "scoop_multiplier": scoop,
            "home_run_multiplier": home,
            "home_run_min_players": min_players,
            "foul_counts_for_home_run": foul_counts,
            "wheel": wheel,
            "quad_counts_as_two_pairs": quads,
        }
    ),
    st.sampled_from([STANDARD, FUJIAN]),
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(2, 5),
    st.booleans(),
    st.sampled_from(["second", "lowest"]),
    st.booleans(),
)


@st.composite
def rounds(draw: st.DrawFn) -> tuple[list[Seat], Ruleset]:
    """2–4 players dealt from one deck; each arranges at random, by the suggestion, declares
    a special when they can, or never arranges."""
    ruleset = draw(rulesets)
    deck = draw(st.permutations(DECK))
    players = draw(st.integers(2, 4))
    seats = []
    for k in range(players):
        hand = deck[13 * k : 13 * k + 13]
        how = draw(st.sampled_from(["random", "random", "suggested", "special", "none"]))
        play: Play
        if how == "none":
            play = NO_ARRANGEMENT
        elif how == "suggested":
            play = Play(suggest(hand, ruleset).arrangement)
        else:
            play = Play(Arrangement.of(hand[:3], hand[3:8], hand[8:]))
            if how == "special":
                with contextlib.suppress(SpecialError):  # no special: keep the arrangement
                    play = declare(hand, "any", ruleset)
        seats.append(Seat(f"P{k}", play))
    return seats, ruleset


@given(rounds())
def test_r6_8_totals_sum_to_zero(round_: tuple[list[Seat], Ruleset]) -> None:
    seats, ruleset = round_
    assert sum(score_round(seats, ruleset).points) == 0


@given(rounds())
def test_r6_pair_points_are_antisymmetric(round_: tuple[list[Seat], Ruleset]) -> None:
    seats, ruleset = round_
    forward = score_round(seats, ruleset)
    backward = score_round(list(reversed(seats)), ruleset)
    by_pair = {(p.a, p.b): p.points for p in forward.pairs}
    for pair in backward.pairs:
        assert by_pair[(pair.b, pair.a)] == -pair.points
    assert forward.points == list(reversed(backward.points))


@given(rounds())
def test_r6_3_a_foul_never_beats_a_non_foul(round_: tuple[list[Seat], Ruleset]) -> None:
    seats, ruleset = round_
    score = score_round(seats, ruleset)
    foul = {p.player_id: p.foul for p in score.players}
    for pair in score.pairs:
        if foul[pair.a] and not foul[pair.b]:
            assert pair.points < 0
        if foul[pair.b] and not foul[pair.a]:
            assert pair.points > 0


@given(
    st.lists(st.tuples(st.integers(-10_000, 10_000), st.integers(0, 5_000)), min_size=2, max_size=4)
)
def test_r9_settlement_sums_to_zero_and_never_takes_more_than_a_balance(
    rows: list[tuple[int, int]],
) -> None:
    points = [p for p, _ in rows]
    points[-1] = -sum(points[:-1])  # gross results of a round sum to zero (R6.8)
    balances = [b for _, b in rows]
    coins = settle(points, balances)
    assert sum(coins) == 0
    for gross, balance, paid in zip(points, balances, coins, strict=True):
        assert paid >= -balance
        assert (paid <= gross) if gross >= 0 else (paid == max(gross, -balance))
        assert paid >= 0 or gross < 0


@given(st.binary(min_size=32, max_size=32), st.text(max_size=20), st.text(max_size=20))
def test_r12_shuffle_is_a_deterministic_permutation(
    seed: bytes, client_seed: str, round_id: str
) -> None:
    first = deal(seed, client_seed, round_id, 4)
    assert first == deal(seed, client_seed, round_id, 4)
    assert sorted(card for hand in first for card in hand) == list(DECK)


@given(rulesets)
def test_r13_ruleset_round_trips_through_a_plain_dict(ruleset: Ruleset) -> None:
    assert Ruleset.from_dict(ruleset.to_dict()) == ruleset


@given(st.permutations(DECK), rulesets)
def test_r5_6_suggestion_uses_the_cards_and_never_fouls(deck: list[Card], ruleset: Ruleset) -> None:
    hand = deck[:13]
    arrangement = suggest(hand, ruleset).arrangement
    assert sorted(arrangement.cards) == sorted(hand)
    assert arrangement.foul_reason(ruleset.wheel) is None
