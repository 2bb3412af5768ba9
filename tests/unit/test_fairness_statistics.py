"""R12.4, R12.5: statistical evidence that the provably fair shuffle deals uniformly.

100,000 deals from distinct, deterministic inputs (server seed = SHA-256 of the index, client
seed and round id derived from it) go through ``domain.fairness.shuffle.deal``. Two chi-square tests
against the uniform distribution:

* card × position: the 52 × 52 table of how often each card lands at each deck position. Both
  margins are fixed (every deck holds each card once and fills each position once), so under
  uniformity the statistic is chi-square with 51 × 51 = 2601 degrees of freedom; each position
  is also tested alone (51 df, Bonferroni over the 52 positions) so a bias confined to one
  position is not diluted by the others;
* first card by seat: the first card dealt to each of the four seats (R12.5: deck positions 0,
  13, 26, 39), 4 × 52 counts, the per-seat statistics summed (204 df).

Critical values come from the Wilson–Hilferty normal approximation at a two-sided significance
of 1e-6 per test (scipy is not a dependency), so the test fails only for a real bias (or a
statistic that is suspiciously too uniform), not by chance. A deliberately broken shuffle
(Sattolo's off-by-one Fisher–Yates) shows the tests have the power to notice.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from math import sqrt
from operator import add
from statistics import NormalDist

import pytest

from domain.fairness.shuffle import HAND_SIZE, deal

pytestmark = pytest.mark.slow  # 100,000 deals dealt and counted: about 6 s

DEALS = 100_000
CARDS = 52
SEATS = 4
ALPHA = 1e-6  # per test, split between the two tails
OFFSETS = tuple(CARDS * position for position in range(CARDS))  # cell = position * 52 + card


def chi_square_bounds(df: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Two-sided critical values of chi-square with ``df`` degrees of freedom (Wilson–Hilferty:
    (X/df)^(1/3) is close to normal with mean 1 − 2/(9 df) and variance 2/(9 df))."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    v = 2 / (9 * df)
    return df * (1 - v - z * sqrt(v)) ** 3, df * (1 - v + z * sqrt(v)) ** 3


def chi_square(observed: Iterable[int], expected: float) -> float:
    return sum((o - expected) ** 2 for o in observed) / expected


@dataclass(frozen=True)
class Tally:
    deals: int
    cells: Sequence[int]  # [position * 52 + card] → count
    first: Sequence[Sequence[int]]  # [seat][card] → how often the seat's first card


def tally(decks: Iterable[Sequence[int]]) -> Tally:
    """Count card × position and each seat's first card; the inner loops run in C."""
    cells: Counter[int] = Counter()
    first: list[Counter[int]] = [Counter() for _ in range(SEATS)]
    seat_starts = [HAND_SIZE * k for k in range(SEATS)]
    count = 0
    for deck in decks:
        cells.update(map(add, OFFSETS, deck))
        for seat, start in enumerate(seat_starts):
            first[seat][deck[start]] += 1
        count += 1
    return Tally(
        count,
        [cells[c] for c in range(CARDS * CARDS)],
        [[f[c] for c in range(CARDS)] for f in first],
    )


def fair_decks(count: int) -> Iterable[tuple[int, ...]]:
    """The deck of each deal, rebuilt from the four hands (R12.5: seat k holds 13k … 13k+12)."""
    for i in range(count):
        index = i.to_bytes(8, "big")
        server_seed = hashlib.sha256(b"server:" + index).digest()
        client_seed = hashlib.sha256(b"client:" + index).hexdigest()[:16]
        hands = deal(server_seed, client_seed, f"round-{i}", SEATS)
        yield tuple(card for hand in hands for card in hand)


@pytest.fixture(scope="module")
def fair() -> Tally:
    return tally(fair_decks(DEALS))


def card_by_position(t: Tally) -> tuple[float, list[float]]:
    """The whole table's statistic (df 51 × 51) and each position's (df 51)."""
    expected = t.deals / CARDS
    whole = chi_square(t.cells, expected)
    per_position = [chi_square(t.cells[o : o + CARDS], expected) for o in OFFSETS]
    return whole, per_position


def first_card_by_seat(t: Tally) -> float:
    return sum(chi_square(seat, t.deals / CARDS) for seat in t.first)


def test_r12_4_every_deal_is_counted(fair: Tally) -> None:
    assert fair.deals == DEALS
    assert sum(fair.cells) == DEALS * CARDS
    for position in range(CARDS):
        assert sum(fair.cells[CARDS * position : CARDS * (position + 1)]) == DEALS
    assert [sum(seat) for seat in fair.first] == [DEALS] * SEATS


def test_r12_4_card_by_position_is_uniform(fair: Tally) -> None:
    """R12.4: every card is equally likely at every position of the shuffled deck."""
    whole, per_position = card_by_position(fair)
    low, high = chi_square_bounds(51 * 51)
    assert low < whole < high, (
        f"card × position chi-square {whole:.1f} outside ({low:.1f}, {high:.1f})"
    )
    low, high = chi_square_bounds(51, ALPHA / CARDS)
    outside = {p: round(x, 1) for p, x in enumerate(per_position) if not low < x < high}
    assert not outside, f"positions whose 52 cards are not uniform (bounds {low:.1f}, {high:.1f})"


def test_r12_5_first_card_of_each_seat_is_uniform(fair: Tally) -> None:
    """R12.4, R12.5: the first card dealt to each of four seats is uniform over the deck."""
    statistic = first_card_by_seat(fair)
    low, high = chi_square_bounds(SEATS * 51)
    assert low < statistic < high, (
        f"first card by seat chi-square {statistic:.1f} outside ({low:.1f}, {high:.1f})"
    )


def test_chi_square_bounds_match_known_quantiles() -> None:
    """Wilson–Hilferty against exact quantiles (scipy.stats.chi2, computed once): the 0.999
    point, and the two-sided 1e-6 bounds the tests use."""
    assert chi_square_bounds(51, 0.002)[1] == pytest.approx(87.968, rel=1e-3)
    assert chi_square_bounds(2601, 0.002)[1] == pytest.approx(2829.59, rel=1e-4)
    assert chi_square_bounds(2601) == pytest.approx((2263.35, 2969.22), rel=1e-4)
    assert chi_square_bounds(204) == pytest.approx((119.98, 318.50), rel=2e-3)
    assert chi_square_bounds(51) == pytest.approx((15.77, 116.44), rel=2e-2)


def _sattolo(rng: random.Random) -> Callable[[], list[int]]:
    """A classic one-character bug: j drawn below i instead of up to i, so no card stays put."""

    def shuffled() -> list[int]:
        deck = list(range(CARDS))
        for i in range(CARDS - 1, 0, -1):
            j = rng.randrange(i)
            deck[i], deck[j] = deck[j], deck[i]
        return deck

    return shuffled


def _naive(rng: random.Random) -> Callable[[], list[int]]:
    """The other classic: swap every position with any position (n^n paths, n! outcomes)."""

    def shuffled() -> list[int]:
        deck = list(range(CARDS))
        for i in range(CARDS):
            j = rng.randrange(CARDS)
            deck[i], deck[j] = deck[j], deck[i]
        return deck

    return shuffled


@pytest.mark.parametrize("broken", [_sattolo, _naive])
def test_the_statistics_detect_a_biased_shuffle(
    broken: Callable[[random.Random], Callable[[], list[int]]],
) -> None:
    """The same statistics, fed 20,000 decks of a known-biased shuffle, fall outside the bounds:
    the tests above are not vacuous."""
    shuffled = broken(random.Random(12))
    t = tally(shuffled() for _ in range(20_000))
    whole, _ = card_by_position(t)
    assert whole > chi_square_bounds(51 * 51)[1]
