"""Statistical tests of the deal's randomness (R12.3–R12.5) at 99% confidence, the tests gaming
labs ask for: frequency, runs and serial correlation, over the raw 32-bit words the shuffle
draws (R12.3) and over the dealt decks (R12.4, R12.5: all 52 cards, seat 0's 13 first). Pure:
the words and decks come in as arguments (``service.tools.rng_collect`` collects them through
``domain.fairness.shuffle.deal``).

A test passes when its p-value is at least ``ALPHA`` (0.01), by the distributions in
``distributions``. Each outcome carries what a report draws of it (``Table``, ``Histogram``).

>>> alternating = [k % 2 * 1000 + k for k in range(100)]    # 0 1001 2 1003 4 …
>>> word_runs(alternating).statistic > Z_CRITICAL             # too many runs
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby
from math import fsum, inf, sqrt
from operator import add, mul, ne
from statistics import NormalDist

from domain.fairness.distributions import (
    ALPHA,
    chi_square_critical,
    chi_square_sf,
    normal_p,
    runs_distribution,
    wald_wolfowitz,
)
from domain.rules.cards import Card

Z_CRITICAL = NormalDist().inv_cdf(1 - ALPHA / 2)
"""|z| above this fails a two-sided normal test at ``ALPHA`` (2.5758)."""
DECK_SIZE = 52
WORD_BITS = 32
WORD_BINS = 256
"""The frequency test of raw words counts their top 8 bits."""
MIN_EXPECTED = 5
"""The fewest expected counts per chi-square cell for the approximation to hold."""


@dataclass(frozen=True)
class Table:
    """The card × position counts: ``counts[position * size + card]``, ``expected`` each."""

    size: int
    counts: tuple[int, ...]
    expected: float


@dataclass(frozen=True)
class Histogram:
    """How often each value was seen (``observed``) against how often a fair generator shows
    it (``expected``), value by value; ``axis`` says what the values count."""

    axis: str
    values: tuple[int, ...]
    observed: tuple[int, ...]
    expected: tuple[float, ...]


@dataclass(frozen=True)
class Outcome:
    """One test's result. ``df`` is the chi-square degrees of freedom, or None for a z
    statistic (standard normal, two-sided); ``critical`` is the statistic's bound at 99%;
    ``figure`` what a report draws of the sample, if anything."""

    name: str
    checks: str
    sample: str
    statistic: float
    df: int | None
    p_value: float
    critical: float
    details: str = ""
    figure: Table | Histogram | None = field(default=None, compare=False, repr=False)

    @property
    def passed(self) -> bool:
        return self.p_value >= ALPHA


def _chi_square(
    name: str,
    checks: str,
    sample: str,
    statistic: float,
    df: int,
    details: str,
    figure: Table | None = None,
) -> Outcome:
    p = chi_square_sf(statistic, df)
    critical = chi_square_critical(df)
    return Outcome(name, checks, sample, statistic, df, p, critical, details, figure)


def _normal(
    name: str, checks: str, sample: str, z: float, details: str, figure: Histogram | None = None
) -> Outcome:
    return Outcome(name, checks, sample, z, None, normal_p(z), Z_CRITICAL, details, figure)


def _card(card: int, deck_size: int) -> str:
    return str(Card(card)) if deck_size == DECK_SIZE else f"card {card}"


# Dealt decks ------------------------------------------------------------------------------------


def card_position(decks: Sequence[Sequence[int]], deck_size: int = DECK_SIZE) -> Outcome:
    """Frequency: how often each card was dealt at each position (a deck_size² table).

    Each position holds one card per deal and each card one position, so both margins are
    fixed: under a uniform shuffle the table is a sum of random permutation matrices, whose
    Pearson X² has mean n(n − 1), and X² · (n − 1)/n is chi-square with (n − 1)² df (the counts'
    covariance is D/(n − 1) times the projection on the (n − 1)² dimensions the margins leave).
    """
    n = deck_size
    deals = len(decks)
    if deals < MIN_EXPECTED * n:
        raise ValueError(f"the card × position test needs at least {MIN_EXPECTED * n} deals")
    offsets = tuple(n * position for position in range(n))  # cell = position * n + card
    cells: Counter[int] = Counter()
    for deck in decks:
        cells.update(map(add, offsets, deck))
    # X² = Σ (O − D/n)² / (D/n) = Σ (n·O − D)² / (n·D), in exact integers
    pearson = sum((n * cells[c] - deals) ** 2 for c in range(n * n)) / (n * deals)
    statistic = pearson * (n - 1) / n
    worst = max(range(n * n), key=lambda c: abs(cells[c] * n - deals))
    return _chi_square(
        "frequency: card × position",
        f"every card is equally likely at every dealt position: the {n} × {n} table of how "
        f"often each card was dealt at each position (positions 0–12 are seat 0's hand, "
        f"13–25 seat 1's, …; R12.4, R12.5)",
        f"{deals:,} deals, {deals * n:,} cards; {deals / n:,.1f} expected per cell",
        statistic,
        (n - 1) ** 2,
        f"Pearson X² {pearson:,.2f} × {n - 1}/{n} (both margins of the table are fixed); "
        f"the cell furthest from expected: {_card(worst % n, n)} at position {worst // n}, "
        f"{cells[worst]} times",
        Table(n, tuple(cells[c] for c in range(n * n)), deals / n),
    )


def dealt_runs(decks: Sequence[Sequence[int]], deck_size: int = DECK_SIZE) -> Outcome:
    """Runs: in each deal's order, runs of low cards (the canonical deck's first half, R1.4:
    2c … 8d) and high ones (8h … As). A uniform shuffle makes each deal a random arrangement
    of n/2 low and n/2 high cards, the Wald–Wolfowitz null hypothesis exactly; the deals are
    independent, so the total count of runs is normal with the summed mean and variance."""
    n = deck_size
    deals = len(decks)
    low = n // 2
    is_low = [card < low for card in range(n)]
    per_deal: Counter[int] = Counter()
    for deck in decks:
        sides = [is_low[card] for card in deck]
        per_deal[1 + sum(map(ne, sides, sides[1:]))] += 1
    runs = sum(count * deal_runs for deal_runs, count in per_deal.items())
    mean, variance = wald_wolfowitz(low, n - low)
    odds = runs_distribution(low, n - low)
    z = (runs - deals * mean) / sqrt(deals * variance)
    return _normal(
        "runs: dealt cards, low and high",
        "dealt order shows neither too few runs (cards clumped by value) nor too many "
        "(alternating): runs of low cards (2c…8d) and high ones (8h…As) in each deal's "
        "52 cards, against the Wald–Wolfowitz distribution",
        f"{deals:,} deals, {deals * n:,} cards",
        z,
        f"{runs:,} runs, {deals * mean:,.1f} expected (variance {deals * variance:,.1f})",
        Histogram(
            "runs in a deal",
            tuple(odds),
            tuple(per_deal[r] for r in odds),
            tuple(deals * p for p in odds.values()),
        ),
    )


def dealt_serial(decks: Sequence[Sequence[int]], deck_size: int = DECK_SIZE) -> Outcome:
    """Serial correlation: the lag-1 correlation of card values (0–51, R1.4) at adjacent
    positions of each deal. Under a uniform shuffle two adjacent cards are a random pair of
    distinct cards, whose correlation is −1/(n − 1), so each deal's sum of centred products has
    mean −(n² − 1)/12; the test compares the deals' mean with it (z with the sample standard
    deviation; the deals are independent)."""
    n = deck_size
    deals = len(decks)
    if deals < 2:
        raise ValueError("the serial correlation of dealt cards needs at least 2 deals")
    centred = [2 * card - (n - 1) for card in range(n)]  # 2·(card − mean), in integers
    sums = []
    for deck in decks:
        values = [centred[card] for card in deck]
        sums.append(sum(map(mul, values, values[1:])))
    expected = -(n * n - 1) / 3  # 4 × −(n² − 1)/12
    mean = fsum(sums) / deals
    spread = sqrt(fsum((s - mean) ** 2 for s in sums) / (deals - 1))
    # Every deal alike (one deal repeated): no spread to judge by, and certainly not random.
    z = (mean - expected) / (spread / sqrt(deals)) if spread else inf
    variance = (n * n - 1) / 3  # 4 × the variance of one card's value
    return _normal(
        "serial correlation: dealt cards, lag 1",
        "a card's value says nothing about the next card's beyond their being distinct: the "
        "lag-1 correlation of card values at adjacent dealt positions",
        f"{deals:,} deals, {deals * (n - 1):,} adjacent pairs",
        z,
        f"correlation {mean / ((n - 1) * variance):+.5f}, {-1 / (n - 1):+.5f} expected",
    )


# Raw words --------------------------------------------------------------------------------------


def word_frequency(words: Sequence[int], bins: int = WORD_BINS) -> Outcome:
    """Frequency: the words' top 8 bits over their 256 values (chi-square, 255 df)."""
    count = len(words)
    if count < MIN_EXPECTED * bins:
        raise ValueError(f"the frequency test of raw words needs at least {MIN_EXPECTED * bins}")
    shift = WORD_BITS - (bins.bit_length() - 1)
    counts = Counter(word >> shift for word in words)
    statistic = sum((bins * counts[b] - count) ** 2 for b in range(bins)) / (bins * count)
    return _chi_square(
        "frequency: raw words",
        f"the words are uniform over 0 … 2^32 − 1: how many fall in each of {bins} equal "
        "ranges (their top 8 bits)",
        f"{count:,} words; {count / bins:,.1f} expected per range",
        statistic,
        bins - 1,
        f"fullest range {max(counts.values()):,}, emptiest {min(counts[b] for b in range(bins)):,}",
    )


def word_runs(words: Sequence[int]) -> Outcome:
    """Runs: Wald–Wolfowitz runs above and below the sample median (words equal to it are
    left out), z against the runs' normal approximation."""
    ordered = sorted(words)
    median = ordered[len(ordered) // 2]
    sides = [word > median for word in words if word != median]
    high = sum(sides)
    low = len(sides) - high
    if not low or not high:  # every word on one side of the median (or on it): not random
        return _normal(
            "runs: raw words above and below the median",
            "words do not clump above or below their median nor alternate: Wald–Wolfowitz runs",
            f"{len(words):,} words, all equal to or on one side of the median {median:,}",
            inf,
            "no runs to count: the words do not vary",
        )
    lengths = Counter(len(list(run)) for _, run in groupby(sides))
    runs = lengths.total()
    mean, variance = wald_wolfowitz(low, high)
    longest = max(lengths)
    while runs / 2 ** (longest + 1) >= 0.5:  # show where a fair run's lengths are still seen
        longest += 1
    return _normal(
        "runs: raw words above and below the median",
        "words do not clump above or below their median nor alternate: Wald–Wolfowitz runs",
        f"{len(words):,} words ({low:,} below the median {median:,}, {high:,} above)",
        (runs - mean) / sqrt(variance),
        f"{runs:,} runs, {mean:,.1f} expected (variance {variance:,.1f})",
        Histogram(
            "length of a run (words on one side of the median)",
            tuple(range(1, longest + 1)),
            tuple(lengths[k] for k in range(1, longest + 1)),
            tuple(runs / 2**k for k in range(1, longest + 1)),  # each run goes on with odds ½
        ),
    )


def word_serial(words: Sequence[int]) -> Outcome:
    """Serial correlation: Knuth's serial correlation coefficient of the words (TAOCP vol. 2,
    §3.3.2 K, the circular form), with mean −1/(N − 1) and standard deviation
    N / ((N − 1)·√(N − 2)) for independent words."""
    n = len(words)
    if n < 3:
        raise ValueError("the serial correlation test needs at least 3 words")
    total = sum(words)
    squares = sum(map(mul, words, words))
    lagged = sum(map(mul, words, words[1:])) + words[-1] * words[0]
    spread = n * squares - total * total
    # Words that never vary have no correlation to measure, and are certainly not random.
    coefficient = (n * lagged - total * total) / spread if spread else 1.0
    mean = -1 / (n - 1)
    deviation = n / ((n - 1) * sqrt(n - 2))
    return _normal(
        "serial correlation: raw words, lag 1",
        "a word says nothing about the next: the lag-1 correlation of consecutive words",
        f"{n:,} words",
        (coefficient - mean) / deviation if spread else inf,
        f"correlation {coefficient:+.6f}, {mean:+.6f} expected (standard deviation "
        f"{deviation:.6f})",
    )


def deck_tests(decks: Sequence[Sequence[int]], deck_size: int = DECK_SIZE) -> list[Outcome]:
    """Every test of dealt decks."""
    return [
        card_position(decks, deck_size),
        dealt_runs(decks, deck_size),
        dealt_serial(decks, deck_size),
    ]


def word_tests(words: Sequence[int]) -> list[Outcome]:
    """Every test of raw words."""
    return [word_frequency(words), word_runs(words), word_serial(words)]
